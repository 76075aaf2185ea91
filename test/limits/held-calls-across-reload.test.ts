import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { GatewayConfig, StaticKey } from "../../src/config/types.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { DOMAIN } from "../support/gateway.js";
import { type HeadsStreamNode, startHeadsStreamNode } from "../support/heads-stream-node.js";

// A user saw a reload (SIGHUP) that changed nothing hand each caller a second allowance of streams and long
// polls (`limits.maxHeldCallsPerCaller`, TOO_MANY_HELD_CALLS 429) beside those it still held on the old
// config: each served config had its own count. The count is now one for the process, and a reload's limit
// applies to it.
const KEY: StaticKey = {
  key: "FNheldkey000000000000000000000",
  networks: "*",
  rate: { perSecond: 1000, burst: 1000 },
};

describe("a reload and maxHeldCallsPerCaller", () => {
  let node: HeadsStreamNode;
  let proxy: RunningProxy;
  let config: GatewayConfig;
  const bodies: { destroy(): void }[] = [];

  beforeAll(async () => {
    node = await startHeadsStreamNode();
    config = {
      ...DEFAULT_CONFIG,
      domain: DOMAIN,
      listen: { host: "127.0.0.1", port: 0 },
      operator: undefined,
      keys: [KEY],
      upstreams: { xtz: [node.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 0 },
      limits: { ...DEFAULT_LIMITS, drainTimeoutMs: 0, maxHeldCallsPerCaller: 1 },
      log: { level: "info", access: false },
    };
    proxy = await runProxy(config, createLogger("silent"));
  });
  afterAll(async () => {
    for (const b of bodies) b.destroy();
    await proxy?.close();
    node?.close();
  });

  const open = async () => {
    const answer = await request(`http://127.0.0.1:${proxy.port}/${KEY.key}/monitor/heads/main`, {
      headers: { host: `xtz.${DOMAIN}` },
    });
    bodies.push(answer.body);
    answer.body.on("data", () => {});
    answer.body.on("error", () => {});
    return answer.statusCode;
  };

  it("refuses a second stream after a reload that changed nothing, as before it", async () => {
    expect(await open()).toBe(200);
    await expect.poll(() => node.streams.size).toBe(1);
    expect(await open()).toBe(429);
    proxy.reload({ ...config });
    expect(node.streams.size).toBe(1); // the first stream is still held
    expect(await open()).toBe(429);
  });

  it("applies a reloaded limit to the calls held before it", async () => {
    proxy.reload({ ...config, limits: { ...config.limits, maxHeldCallsPerCaller: 2 } });
    expect(await open()).toBe(200);
    await expect.poll(() => node.streams.size).toBe(2);
    expect(await open()).toBe(429);
  });
});
