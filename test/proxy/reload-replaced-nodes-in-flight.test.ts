import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { GatewayConfig } from "../../src/config/types.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";

// An operator reloads (SIGHUP) a label onto other nodes while calls wait for the prober's first verdict on
// the nodes of the config being replaced (a call that came just after the reload before, or as the proxy
// started). README ("Signals"): requests in flight finish on the old config, however long they take. The
// reload cordoned every node of the retired config (served-config.ts cordonRemoved, meant to move its
// WebSocket connections), so once the probe answered the waiting calls found every node out of rotation
// and failed with 503 NO_UPSTREAM, though their config's node was there to serve them.
describe("a call waiting for the first probe across a reload that replaces its label's nodes", () => {
  const servers: Server[] = [];
  let gw: RunningGateway;
  let releaseProbe: () => void = () => {};
  const probeHeld = new Promise<void>((resolve) => (releaseProbe = resolve));
  let probes = 0;

  // answers as geth does over HTTP (anvil's chain id set to the label's); node "a" holds its first probe
  const node = async (name: string, head: string) => {
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", async () => {
        const call = JSON.parse(body) as { id: unknown; method: string };
        if (name === "a" && call.method === "eth_chainId" && probes++ === 0) await probeHeld;
        const result = call.method === "eth_chainId" ? "0x1" : head;
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
  let a = "";
  let b = "";

  beforeAll(async () => {
    a = await node("a", "0x10");
    b = await node("b", "0x20");
    gw = await startGateway({
      upstreams: { eth: [a] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000, probeTimeoutMs: 10_000 },
    });
  });
  afterAll(async () => {
    releaseProbe();
    await gw?.close();
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
  });

  it("is served by its config's node once the probe answers", async () => {
    const answer = gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_blockNumber", [], 7) });
    await expect.poll(() => probes).toBe(1);
    gw.gateway.reload({ ...gw.config, upstreams: { eth: [b] } } as GatewayConfig, gw.keys);
    releaseProbe();
    const got = await answer;
    expect(got.text).toContain('"result"');
    expect(got.status).toBe(200);
  });

  it("while new calls go to the new node", async () => {
    const got = await gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_blockNumber", [], 8) });
    expect(got.json).toEqual({ jsonrpc: "2.0", id: 8, result: "0x20" });
  });
});
