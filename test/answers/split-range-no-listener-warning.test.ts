import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";

// A wide eth_getLogs that the gateway splits (docs/upstreams.md, "Ranges": sub-ranges four at a time) added
// one "close" listener to the caller's response per sub-range attempt (src/upstream/attempt.ts), never taken
// off: past ten sub-ranges Node printed "Possible EventEmitter memory leak detected" per request. With the
// shipped limits (splitAbove 2,000) that is any query over 20,000 blocks; here splitAbove 10 on 200 real
// anvil blocks, behind a front that can hold eth_getLogs. A caller that leaves must still have the attempts
// under way aborted, which is what the listener is for.

describe("a range split into many sub-ranges, on one caller's response", () => {
  let anvil: Anvil;
  let front: Server;
  let gw: RunningGateway;
  let holdMs = 0;
  /** eth_getLogs the front got, and those whose request the gateway cut before the answer. */
  let asked = 0;
  let cut = 0;
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 1 });
    await anvil.rpc("anvil_mine", ["0xc8"]);
    front = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", async () => {
        const body = Buffer.concat(chunks).toString("utf8");
        if (body.includes('"eth_getLogs"')) {
          asked += 1;
          let closed = false;
          res.on("close", () => {
            closed = true;
          });
          await new Promise((resolve) => setTimeout(resolve, holdMs));
          if (closed) {
            cut += 1;
            return;
          }
        }
        const answer = await fetch(anvil.url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        });
        res.writeHead(answer.status, { "content-type": "application/json" });
        res.end(await answer.text());
      });
    });
    await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
    gw = await startGateway({
      upstreams: { eth: [{ url: `http://127.0.0.1:${(front.address() as AddressInfo).port}`, name: "a" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      blockRanges: { eth: { eth_getLogs: { splitAbove: 10, refuseAbove: 5_000 } } },
    });
    await everyNodeInRotation(gw);
    process.on("warning", onWarning);
  });
  afterAll(async () => {
    process.off("warning", onWarning);
    await gw?.close();
    await new Promise((resolve) => front?.close(resolve));
    await anvil?.stop();
  });

  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 7,
    method: "eth_getLogs",
    params: [{ fromBlock: "0x1", toBlock: "0xc8" }],
  });

  it("a split into 20 sub-ranges answers with no leak warning", async () => {
    holdMs = 0;
    asked = 0;
    const answer = await gw.call("eth", `/${KEYS.all}`, { body });
    expect(answer.json).toEqual({ jsonrpc: "2.0", id: 7, result: [] });
    expect(asked).toBe(20);
    // Node emits a warning on the next tick after the listener that crossed the limit was added
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toEqual([]);
  });

  it("a caller that leaves has its sub-ranges under way cut, and no more sent", async () => {
    holdMs = 1_000;
    [asked, cut] = [0, 0];
    const leaving = new AbortController();
    const call = request(`${gw.origin}/${KEYS.all}`, {
      method: "POST",
      headers: { host: `eth.${DOMAIN}`, "content-type": "application/json" },
      body,
      signal: leaving.signal,
    }).catch(() => undefined);
    await expect.poll(() => asked, { timeout: 2_000 }).toBe(4);
    leaving.abort();
    await call;
    // the four in flight are cut at the node once it would answer
    await expect.poll(() => cut, { timeout: 3_000 }).toBe(4);
    expect(asked).toBe(4);
  });
});
