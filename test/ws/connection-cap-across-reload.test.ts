import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { GatewayConfig, StaticKey } from "../../src/config/types.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { DOMAIN } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A user saw a reload (SIGHUP) that changed nothing let a key open `ws.maxConnectionsPerKey` more
// WebSocket connections beside those it held on the old config: each served config counted its own. The
// counts are now one for the process, and a reload's caps apply to them.
const KEY: StaticKey = {
  key: "FNcapkey0000000000000000000000",
  networks: "*",
  rate: { perSecond: 1000, burst: 1000 },
};

describe("a reload and the per-key WebSocket connection cap", () => {
  let node: LoopbackWsNode;
  let proxy: RunningProxy;
  let config: GatewayConfig;
  let restore: () => void;
  const clients: Client[] = [];

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(evmNode());
    config = {
      ...DEFAULT_CONFIG,
      domain: DOMAIN,
      listen: { host: "127.0.0.1", port: 0 },
      operator: undefined,
      keys: [KEY],
      upstreams: { eth: [{ url: node.url, ws: node.wsUrl, name: "eth-node" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 0 },
      limits: { ...DEFAULT_LIMITS, drainTimeoutMs: 0, ws: { ...DEFAULT_LIMITS.ws, maxConnectionsPerKey: 1 } },
      log: { level: "info", access: false },
    };
    proxy = await runProxy(config, createLogger("silent"));
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await proxy?.close();
    await node?.close();
    restore?.();
  });

  const url = () => `ws://eth.${DOMAIN}:${proxy.port}/${KEY.key}`;
  /** Whether a connection of the key opens, or is refused at its upgrade. */
  const tryOpen = () =>
    Client.open(url()).then(
      (c) => {
        clients.push(c);
        return "opened";
      },
      () => "refused",
    );

  it("still refuses a second connection after a reload that changed nothing", async () => {
    const first = await Client.open(url());
    clients.push(first);
    expect((await first.call("eth_chainId")).result).toBe("0x1");
    // the cap holds before the reload
    await expect(tryOpen()).resolves.toBe("refused");
    proxy.reload({ ...config });
    // the first connection is still open, on the old config
    expect((await first.call("eth_chainId")).result).toBe("0x1");
    const second = await tryOpen();
    expect(second).toBe("refused");
  });

  it("applies a reloaded cap to the connections opened before it", async () => {
    const raised = {
      ...config,
      limits: { ...config.limits, ws: { ...config.limits.ws, maxConnectionsPerKey: 2 } },
    };
    proxy.reload(raised);
    const second = await Client.open(url());
    clients.push(second);
    expect((await second.call("eth_chainId")).result).toBe("0x1");
    const third = await tryOpen();
    expect(third).toBe("refused");
  });
});
