import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_CONFIG, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { GatewayConfig } from "../../src/config/types.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// The operator API's cordon (docs/upstreams.md) reaches the WebSocket connections a reload left on the
// config they opened with, in one process as in a cluster.

describe("the operator's cordon after a reload, one process", () => {
  let ws: LoopbackWsNode[];
  let http: LoopbackNode[];
  let proxy: RunningProxy;
  let config: GatewayConfig;
  let restore: () => void;
  const openOn = () => ws.map((node) => node.connections.filter((c) => c.isOpen).length);

  beforeAll(async () => {
    restore = resolveTestHosts();
    ws = await Promise.all([startLoopbackWsNode(evmNode()), startLoopbackWsNode(evmNode())]);
    const probes = { eth_blockNumber: "0x10", eth_chainId: "0x1" };
    http = await Promise.all([
      startLoopbackNode(jsonRpcResponder(probes)),
      startLoopbackNode(jsonRpcResponder(probes)),
    ]);
    config = {
      ...DEFAULT_CONFIG,
      cache: { ...DEFAULT_CACHE, enabled: false },
      domain: DOMAIN,
      listen: { host: "127.0.0.1", port: 0 },
      operator: { listen: { host: "127.0.0.1", port: 0 } },
      keys: TEST_KEYS,
      upstreams: {
        eth: ["a", "b"].map((name, i) => ({
          url: http[i]?.url as string,
          ws: ws[i]?.wsUrl as string,
          name,
          ...(name === "b" ? { tier: "fallback" as const } : {}),
        })),
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 50 },
      log: { level: "error", access: false },
    } as GatewayConfig;
    proxy = await runProxy(config, createLogger("error"));
  });
  afterAll(async () => {
    await proxy?.close();
    await Promise.all([...ws, ...http].map((node) => node?.close()));
    restore?.();
  });

  it("moves a connection opened before the reload off the cordoned node", async () => {
    await eventually(
      async () => {
        const upstreams = await request(`http://127.0.0.1:${proxy.operatorPort}/upstreams`);
        return ((await upstreams.body.text()).match(/"state":"healthy"/g) ?? []).length === 2;
      },
      3_000,
      "both nodes in rotation",
    );
    const client = await Client.open(`ws://eth.${DOMAIN}:${proxy.port}/${KEYS.all}`);
    await client.call("eth_subscribe", ["newHeads"]);
    expect(openOn()).toEqual([1, 0]);
    proxy.reload({ ...config });
    const cordoned = await request(`http://127.0.0.1:${proxy.operatorPort}/upstreams/cordon`, {
      method: "POST",
      body: JSON.stringify({ label: "eth", upstream: "a" }),
      headers: { "content-type": "application/json" },
    });
    expect(cordoned.statusCode).toBe(200);
    await cordoned.body.text();
    await eventually(() => openOn().join() === "0,1", 3_000, "the connection on b");
    expect(client.isOpen).toBe(true);
    client.close();
  });
});
