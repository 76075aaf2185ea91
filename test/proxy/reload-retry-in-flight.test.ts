import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GatewayConfig } from "../../src/config/types.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";

// A user saw a read in flight across a reload (SIGHUP) fail with 502 UPSTREAM_BAD_RESPONSE when its node
// dropped the connection: the retired config's upstream pools were closed once `limits.drainTimeoutMs` had
// passed, its requests done or not, so the read moved to the other node met a closed pool. README
// ("Signals"): requests in flight finish on the old config; a reload waits for them however long they take.
describe("a read in flight at a reload that must move to its other node", () => {
  const servers: Server[] = [];
  let gw: RunningGateway;
  let first = true;
  const seen: string[] = [];

  const node = async (name: string) => {
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        seen.push(name);
        const call = JSON.parse(body) as { id: unknown; method: string };
        if (first) {
          first = false;
          // the node process dies mid-call: its connection is reset
          setTimeout(() => res.socket?.destroy(), 1_500);
          return;
        }
        const result = call.method === "eth_chainId" ? "0x1" : "0x10";
        const text = JSON.stringify({ jsonrpc: "2.0", id: call.id, result });
        res
          .writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
          .end(text);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    servers.push(server);
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };

  beforeAll(async () => {
    const a = await node("a");
    const b = await node("b");
    gw = await startGateway({
      upstreams: { eth: [a, b] },
      // an operator who wants stops over within a second; reads may take longer (upstream.deadlineMs: 10 s)
      limits: { drainTimeoutMs: 1_000 },
    });
  });
  afterAll(async () => {
    await gw?.close();
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
  });

  it("is answered by the other node as without the reload", async () => {
    const answer = gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_blockNumber", [], 7) });
    await expect.poll(() => seen.length).toBe(1);
    gw.gateway.reload({ ...gw.config } as GatewayConfig, gw.keys);
    const got = await answer;
    expect(got.json).toEqual({ jsonrpc: "2.0", id: 7, result: "0x10" });
    expect(seen.length).toBe(2); // tried on one node, then the other
  });

  it("without a reload: the other node answers", async () => {
    first = true;
    seen.length = 0;
    const got = await gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_blockNumber", [], 6) });
    expect(got.json).toEqual({ jsonrpc: "2.0", id: 6, result: "0x10" });
  });
});
