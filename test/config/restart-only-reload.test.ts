import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { changedRestartOnly, withRestartOnlyOf } from "../../src/config/restart-only.js";
import type { GatewayConfig, StaticKey } from "../../src/config/types.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { DOMAIN } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";

// A user saw `limits.maxHeaders`, a setting that takes a restart, half applied by a reload (SIGHUP): the
// listener kept the count it started with, while stage 1 read the reloaded one. Raised, a request past the
// running count had its headers cut by Node and was served; lowered, the new limit was enforced although the
// warning said "config reloaded without these settings, which take a restart". A reload now serves the
// running values of every restart-only setting (src/config/restart-only.ts withRestartOnlyOf).
const KEY: StaticKey = {
  key: "FNhdrkey0000000000000000000000",
  networks: "*",
  rate: { perSecond: 1000, burst: 1000 },
};

function post(port: number, headerCount: number): Promise<{ status: number; body: string }> {
  const headers: [string, string][] = [
    ["host", `eth.${DOMAIN}`],
    ["content-type", "application/json"],
  ];
  for (let i = headers.length; i < headerCount; i++) headers.push([`x-filler-${i}`, "1"]);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: `/${KEY.key}`,
        headers: headers.flat() as unknown as Record<string, string>,
      },
      (res) => {
        let body = "";
        res.on("data", (c) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }));
  });
}

describe("limits.maxHeaders, a restart-only setting, changed by a reload", () => {
  let node: LoopbackWsNode;
  let proxy: RunningProxy;
  let config: GatewayConfig;

  beforeAll(async () => {
    node = await startLoopbackWsNode(evmNode());
    config = {
      ...DEFAULT_CONFIG,
      domain: DOMAIN,
      listen: { host: "127.0.0.1", port: 0 },
      operator: undefined,
      keys: [KEY],
      upstreams: { eth: [{ url: node.url, name: "eth-node" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 0 },
      limits: { ...DEFAULT_LIMITS, drainTimeoutMs: 0, maxHeaders: 20 },
      log: { level: "info", access: false },
    };
    proxy = await runProxy(config, createLogger("silent"));
  });
  afterAll(async () => {
    await proxy?.close();
    await node?.close();
  });

  it("raised by a reload: a request past the running limit is still refused 431, not served with headers cut", async () => {
    expect((await post(proxy.port, 10)).status).toBe(200);
    expect((await post(proxy.port, 30)).status).toBe(431);
    const next = { ...config, limits: { ...config.limits, maxHeaders: 40 } };
    // the reload's warning names it: not applied until a restart
    expect(changedRestartOnly(config, next)).toEqual(["limits.maxHeaders"]);
    proxy.reload(next);
    expect((await post(proxy.port, 30)).status).toBe(431);
  });

  it("lowered by a reload: the running limit still holds until a restart, as the warning says", async () => {
    proxy.reload(config); // back to 20
    const next = { ...config, limits: { ...config.limits, maxHeaders: 5 } };
    expect(changedRestartOnly(config, next)).toEqual(["limits.maxHeaders"]);
    proxy.reload(next);
    expect((await post(proxy.port, 10)).status).toBe(200);
  });

  it("keeps every restart-only setting at its running value, and leaves the file's config as it was", () => {
    const next: GatewayConfig = {
      ...config,
      listen: { host: "0.0.0.0", port: 9999 },
      workers: 4,
      metrics: { ...config.metrics, enabled: !config.metrics.enabled },
      log: { level: "debug", access: true },
      limits: { ...config.limits, maxHeaders: 7, keepAliveTimeoutMs: 1, drainTimeoutMs: 1234 },
    };
    const changed = changedRestartOnly(config, next);
    expect(changed.length).toBeGreaterThan(4);
    const served = withRestartOnlyOf(config, next);
    expect(changedRestartOnly(config, served)).toEqual([]);
    // what a reload can change, it changes
    expect(served.limits.drainTimeoutMs).toBe(1234);
    expect(served.log.access).toBe(true);
    expect(changedRestartOnly(config, next)).toEqual(changed);
  });
});
