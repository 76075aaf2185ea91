import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A move the gateway chooses (off a fallback once a primary is back, off a lagging or cordoned node) opens
// its socket on the better node first: a connection whose own node still answers keeps it when the better
// node's WebSocket does not open (here a primary whose port takes TCP and never answers the handshake).

describe("a better node whose WebSocket does not open", () => {
  let fallback: LoopbackWsNode;
  let http: LoopbackNode[];
  let hang: net.Server;
  const tried: net.Socket[] = [];
  let gw: RunningGateway;
  let restore: () => void;
  const member = (name: string) =>
    gw.gateway.upstreams.group("eth", "/")?.members.find((m) => m.name === name);

  beforeAll(async () => {
    restore = resolveTestHosts();
    fallback = await startLoopbackWsNode(evmNode());
    hang = net.createServer((socket) => tried.push(socket));
    await new Promise<void>((resolve) => hang.listen(0, "127.0.0.1", resolve));
    const port = (hang.address() as net.AddressInfo).port;
    const probes = { eth_blockNumber: "0x10", eth_chainId: "0x1" };
    http = await Promise.all([
      startLoopbackNode(jsonRpcResponder(probes)),
      startLoopbackNode(jsonRpcResponder(probes)),
    ]);
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: http[0]?.url as string, ws: `ws://127.0.0.1:${port}`, name: "a" },
          { url: http[1]?.url as string, ws: fallback.wsUrl, name: "b", tier: "fallback" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 50 },
      limits: { ws: { ...DEFAULT_LIMITS.ws, handshakeTimeoutMs: 300 } },
    });
    await eventually(() => member("a")?.health.inRotation === true, 3_000, "a in rotation");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([fallback, ...http].map((node) => node?.close()));
    for (const socket of tried) socket.destroy();
    hang?.close();
    restore?.();
  });

  it("keeps a working connection on the fallback, and its subscription", async () => {
    member("a")?.health.cordon(true);
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const id = (await client.call("eth_subscribe", ["newHeads"])).result;
    member("a")?.health.cordon(false);
    // the gateway tried a, gave up on its handshake (300 ms), and found no better node than b: it opened
    // nothing on b, the connection's own node, whose socket stays. Ten probe rounds (50 ms) outlast the try.
    await eventually(() => tried.length > 0, 3_000, "a tried");
    const probes = http[0]?.requests.length ?? 0;
    await eventually(() => (http[0]?.requests.length ?? 0) >= probes + 10, 3_000, "ten probe rounds");
    expect([fallback.connections.length, fallback.openConnections()]).toEqual([1, 1]);
    expect(client.isOpen).toBe(true);
    const [onB] = [...(fallback.connections.find((c) => c.isOpen)?.subscriptions.values() ?? [])];
    const from = client.received.length;
    onB?.notify({ number: "0x11", parentHash: `0x${"44".repeat(32)}` });
    const pushed = JSON.parse(await client.waitFor((t) => t.includes("eth_subscription"), 3_000, from));
    expect(pushed.params.subscription).toBe(id);
    client.close();
  });
});
