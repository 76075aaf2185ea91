import { connect, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { GatewayConfig, StaticKey } from "../../src/config/types.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { DOMAIN } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// docs/plans.md, "Key settings": "New settings reach every proxy ... A WebSocket connection of the key is
// closed (1008) ... so that each comes back under them"; a revoked key's connections end too. An upgrade
// admitted just before the change, whose socket to the node is still opening (a node a few hundred ms
// away), is not yet in the connections closeKey walks (ws/upgrade.ts): it opens after the change under the
// old settings, or for a key that no longer exists, and stays open for good.

const RATE = { perSecond: 1_000, burst: 1_000 };
const NARROWED: StaticKey = { key: "FNinflightNarrow00000000000000", networks: "*", rate: RATE };
const REMOVED: StaticKey = { key: "FNinflightRemoved0000000000000", networks: "*", rate: RATE };
const DELAY_MS = 1_500;

/** A TCP path to the node that takes DELAY_MS before it carries a connection (a node far away). */
async function slowPath(
  targetPort: number,
): Promise<{ port: number; server: Server; sockets: Set<Socket>; accepted: () => number }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createServer((client) => {
    accepted += 1;
    sockets.add(client);
    client.pause();
    setTimeout(() => {
      const upstream = connect({ host: "127.0.0.1", port: targetPort });
      sockets.add(upstream);
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
      const end = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on("error", end).on("close", end);
      upstream.on("error", end).on("close", end);
    }, DELAY_MS);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as { port: number }).port, server, sockets, accepted: () => accepted };
}

describe("an upgrade in flight while its key's settings change or the key goes", () => {
  let node: LoopbackWsNode;
  let path: Awaited<ReturnType<typeof slowPath>>;
  let proxy: RunningProxy;
  let config: GatewayConfig;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(evmNode({ debug_traceTransaction: { structLogs: [] } }));
    path = await slowPath(node.port);
    config = {
      ...DEFAULT_CONFIG,
      domain: DOMAIN,
      listen: { host: "127.0.0.1", port: 0 },
      operator: undefined,
      keys: [NARROWED, REMOVED],
      upstreams: {
        eth: [{ url: `http://127.0.0.1:${path.port}`, ws: `ws://127.0.0.1:${path.port}`, name: "eth-node" }],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 0 },
      limits: { ...DEFAULT_LIMITS, drainTimeoutMs: 0 },
      log: { level: "info", access: false },
    };
    proxy = await runProxy(config, createLogger("silent"));
  });
  afterAll(async () => {
    await proxy?.close();
    for (const s of path?.sockets ?? []) s.destroy();
    path?.server.close();
    await node?.close();
    restore?.();
  });

  it("a connection opened under the old settings, or for a removed key, is closed as the open ones are", async () => {
    const url = (key: StaticKey) => `ws://eth.${DOMAIN}:${proxy.port}/${key.key}`;
    const narrowed = Client.open(url(NARROWED));
    const removed = Client.open(url(REMOVED));
    // both upgrades were admitted once their node sockets reached the slow path, where they wait
    const started = Date.now();
    while (path.accepted() < 2 && Date.now() - started < DELAY_MS) await new Promise((r) => setTimeout(r, 5));
    expect(path.accepted()).toBe(2);
    proxy.reload({
      ...config,
      keys: [{ ...NARROWED, settings: { methods: ["eth_blockNumber"] } }],
    });
    // a fresh upgrade of the removed key is refused: it no longer exists
    const [n, r] = await Promise.all([narrowed, removed]);
    const narrowedAnswer = await n.call("eth_chainId").catch((e: Error) => ({ closed: e.message }));
    const removedAnswer = await r.call("eth_chainId").catch((e: Error) => ({ closed: e.message }));
    // the same calls on connections opened after the change: refused, as they should be
    const fresh = await Client.open(url(NARROWED));
    const freshAnswer = await fresh.call("eth_chainId");
    fresh.close();
    const freshRemoved = await Client.open(url(REMOVED)).then(
      () => "opened",
      (e: Error) => `refused: ${e.message}`,
    );
    // and a while later the in-flight ones are still open and still served
    await new Promise((res) => setTimeout(res, 1_000));
    const later = await r.call("eth_chainId").catch((e: Error) => ({ closed: e.message }));
    n.close();
    r.close();
    expect(freshAnswer.error?.data).toMatchObject({ setting: "methods" });
    expect(freshRemoved).toMatch(/refused/);
    // expected: neither in-flight connection serves the call (1008, as for the connections already open)
    expect({ narrowedAnswer, removedAnswer, later }).toEqual({
      narrowedAnswer: expect.not.objectContaining({ result: "0x1" }),
      removedAnswer: expect.not.objectContaining({ result: "0x1" }),
      later: expect.not.objectContaining({ result: "0x1" }),
    });
  });
});
