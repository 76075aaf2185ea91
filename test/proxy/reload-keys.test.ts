import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { GatewayConfig, StaticKey } from "../../src/config/types.js";
import { changedStaticKeys } from "../../src/keys/static-store.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { DOMAIN } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A reload (SIGHUP) that removes a static key of the deployment config, or changes what it may do, ends its
// open WebSocket connections (1008), as a revoked account key's are: they were granted under the old entry.
// A key the reload leaves as it was keeps its connections.
const RATE = { perSecond: 1_000, burst: 1_000 };
const REMOVED: StaticKey = { key: "FNremoved000000000000000000000", networks: "*", rate: RATE };
const NARROWED: StaticKey = { key: "FNnarrow0000000000000000000000", networks: "*", rate: RATE };
const KEPT: StaticKey = { key: "FNkeptkey000000000000000000000", networks: "*", rate: RATE };

describe("a reload that removes or changes a static key", () => {
  let node: LoopbackWsNode;
  let proxy: RunningProxy;
  let config: GatewayConfig;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(evmNode());
    config = {
      ...DEFAULT_CONFIG,
      domain: DOMAIN,
      listen: { host: "127.0.0.1", port: 0 },
      operator: undefined,
      keys: [REMOVED, NARROWED, KEPT],
      upstreams: { eth: [{ url: node.url, ws: node.wsUrl, name: "eth-node" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 0 },
      limits: { ...DEFAULT_LIMITS, drainTimeoutMs: 0 },
      log: { level: "info", access: false },
    };
    proxy = await runProxy(config, createLogger("silent"));
  });
  afterAll(async () => {
    await proxy?.close();
    await node?.close();
    restore?.();
  });

  it("closes their connections with 1008; the others go on", async () => {
    const open = (key: StaticKey) => Client.open(`ws://eth.${DOMAIN}:${proxy.port}/${key.key}`);
    const [removed, narrowed, kept] = await Promise.all([open(REMOVED), open(NARROWED), open(KEPT)]);
    for (const client of [removed, narrowed, kept])
      expect((await client.call("eth_chainId")).result).toBe("0x1");
    proxy.reload({
      ...config,
      keys: [{ ...NARROWED, settings: { methods: ["eth_blockNumber"] } }, KEPT],
    });
    for (const client of [removed, narrowed]) expect((await client.closed).code).toBe(1008);
    expect((await kept.call("eth_chainId")).result).toBe("0x1");
    kept.close();
  });

  it("names the keys a reload takes away or changes, a rate left to the default included", () => {
    const defaulted: StaticKey = { key: "FNdefrate000000000000000000000", networks: "*" };
    const before = { keys: [REMOVED, NARROWED, KEPT, defaulted], defaultRate: RATE };
    const after = {
      keys: [{ ...NARROWED, plan: "dedicated" }, KEPT, defaulted],
      defaultRate: { perSecond: 5, burst: 5 },
    };
    expect(changedStaticKeys(before, after).sort()).toEqual(["FNdefrat", "FNnarrow", "FNremove"]);
    expect(changedStaticKeys(before, before)).toEqual([]);
    // the same grant written another way is no change: networks in another order, defaults written out
    const rewritten = {
      keys: [
        { ...REMOVED, networks: ["eth", "base"] },
        { ...NARROWED, plan: "shared", archive: true },
        KEPT,
        { ...defaulted, rate: RATE },
      ],
      defaultRate: RATE,
    };
    expect(
      changedStaticKeys(
        { ...rewritten, keys: [{ ...REMOVED, networks: ["base", "eth"] }, ...rewritten.keys.slice(1)] },
        rewritten,
      ),
    ).toEqual([]);
    expect(
      changedStaticKeys(before, {
        ...before,
        keys: [REMOVED, { ...NARROWED, plan: "shared" }, KEPT, defaulted],
      }),
    ).toEqual([]);
  });
});
