import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { GatewayConfig } from "../../src/config/types.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";

// Two reloads (SIGHUP) in a row while a call waits for the prober's first verdict on the nodes of the
// config it came on: the first takes node a out of the deployment, the second puts a back and takes b out.
// The second reload cordoned b in the retired config before it uncordoned a (served-config.ts
// cordonRemoved, in the config's order of nodes): for that moment both were out of rotation, which
// released the waiting call with no node, a 503 NO_UPSTREAM, though a was back a moment later.
describe("a call waiting across two reloads that swap its label's nodes", () => {
  const servers: Server[] = [];
  let gw: RunningGateway;
  const holds = new Map<string, () => void>();
  const probed = new Set<string>();
  const answeredProbe = new Set<string>();

  // answers as geth does over HTTP (with the label's chain id); each node holds its first probe until told
  const node = async (name: string) => {
    let first = true;
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", async () => {
        const call = JSON.parse(body) as { id: unknown; method: string };
        if (call.method === "eth_chainId" && first) {
          first = false;
          probed.add(name);
          await new Promise<void>((resolve) => holds.set(name, resolve));
          res.once("finish", () => answeredProbe.add(name));
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
  let a = "";
  let b = "";

  beforeAll(async () => {
    b = await node("b");
    a = await node("a");
    gw = await startGateway({
      upstreams: { eth: [b, a] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000, probeTimeoutMs: 10_000 },
    });
  });
  afterAll(async () => {
    for (const release of holds.values()) release();
    await gw?.close();
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
  });

  it("is served by the node put back", async () => {
    const answer = gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_blockNumber", [], 7) });
    await expect.poll(() => probed.size).toBe(2);
    gw.gateway.reload({ ...gw.config, upstreams: { eth: [b] } } as GatewayConfig, gw.keys);
    // a's first probe answers (a is out of the deployment: the call goes on waiting for b's)
    holds.get("a")?.();
    await expect.poll(() => answeredProbe.has("a")).toBe(true);
    gw.gateway.reload({ ...gw.config, upstreams: { eth: [a] } } as GatewayConfig, gw.keys);
    const got = await answer;
    expect(got.text).toContain('"result":"0x10"');
    expect(got.status).toBe(200);
  });
});
