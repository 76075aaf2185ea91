import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { DEFAULT_CACHE, DEFAULT_CONFIG, DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { GatewayConfig } from "../../src/config/types.js";
import { freePort } from "../../src/dev/free-port.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, TEST_KEYS } from "../support/gateway.js";
import {
  jsonRpcResponder,
  type LoopbackNode,
  restResponder,
  startLoopbackNode,
} from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import {
  type Exposition,
  needPrometheusParser,
  parseExposition,
  seriesValue,
} from "../support/prometheus-text.js";

// GET /metrics after a known mix of calls: every counter moved by exactly what was sent. The text is read
// with Prometheus' own text-format parser (skipped with its reason where it is missing, failed under CI), and
// holds no key, path or address.

const SLOW_KEY = "FNtestMetricsSlowKey0000000000";

const parser = needPrometheusParser();

describe.skipIf(parser.skip)("GET /metrics", () => {
  let node: LoopbackNode;
  let ws: LoopbackWsNode;
  let proxy: RunningProxy;
  let config: GatewayConfig;
  let deadNode = "";
  let text = "";

  const scrape = async (): Promise<Exposition> => {
    const r = await request(`http://127.0.0.1:${proxy.operatorPort}/metrics`);
    expect(r.statusCode).toBe(200);
    expect(r.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
    text = await r.body.text();
    return parseExposition(text);
  };
  const call = (label: string, key: string, body: string) =>
    request(`http://127.0.0.1:${proxy.port}/${key}/`, {
      method: "POST",
      headers: { host: `${label}.${DOMAIN}`, "content-type": "application/json" },
      body,
    }).then(async (r) => ({ status: r.statusCode, text: await r.body.text() }));
  const rpc = (method: string, id = 1) => `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":[]}`;

  beforeAll(async () => {
    node = await startLoopbackNode(
      (await import("../support/loopback-node.js")).firstOf(
        jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1" }),
        restResponder({ "GET /v2/status": { "last-round": 7 } }),
      ),
    );
    ws = await startLoopbackWsNode({
      results: { eth_blockNumber: "0x10" },
      subscriptions: { eth_subscribe: { notification: "eth_subscription", unsubscribe: "eth_unsubscribe" } },
    });
    deadNode = `http://127.0.0.1:${await freePort()}`;
    config = {
      ...DEFAULT_CONFIG,
      // what reaches the nodes is what this counts: no answer cache in between
      cache: { ...DEFAULT_CACHE, enabled: false },
      domain: DOMAIN,
      listen: { host: "127.0.0.1", port: 0 },
      operator: { listen: { host: "127.0.0.1", port: 0 } },
      keys: [...TEST_KEYS, { key: SLOW_KEY, networks: "*", rate: { perSecond: 0.001, burst: 1 } }],
      upstreams: {
        eth: [{ url: node.url, ws: ws.wsUrl, name: "eth-node" }],
        algo: [node.url],
        avax: [deadNode], // nothing listens: the node is down
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 0 },
      limits: { ...DEFAULT_LIMITS, drainTimeoutMs: 0 },
      log: { level: "info", access: false },
    };
    proxy = await runProxy(config, createLogger("silent"));
  });
  afterAll(async () => {
    await proxy?.close();
    await Promise.all([node?.close(), ws?.close()]);
  });

  it("counts every request by label, family, method or route, result and code, exactly", async () => {
    const before = await scrape();
    for (let i = 0; i < 5; i++)
      expect((await call("eth", KEYS.all, rpc("eth_blockNumber", i))).status).toBe(200);
    for (let i = 0; i < 2; i++)
      expect((await call("avax", KEYS.all, rpc("eth_blockNumber", i))).status).toBe(503);
    for (let i = 0; i < 3; i++) expect((await call("eth", KEYS.all, rpc("admin_peers", i))).status).toBe(403);
    expect((await call("eth", "FNwrongKey000000000000000000", rpc("eth_blockNumber"))).status).toBe(401);
    expect((await call("eth", SLOW_KEY, rpc("eth_blockNumber"))).status).toBe(200);
    for (let i = 0; i < 2; i++)
      expect((await call("eth", SLOW_KEY, rpc("eth_blockNumber", i))).status).toBe(429);
    const batch = `[${rpc("eth_blockNumber", 1)},${rpc("eth_chainId", 2)}]`;
    expect((await call("eth", KEYS.all, batch)).status).toBe(200);
    const rest = await request(`http://127.0.0.1:${proxy.port}/${KEYS.all}/v2/status?round=1`, {
      headers: { host: `algo.${DOMAIN}` },
    });
    expect(rest.statusCode).toBe(200);
    await rest.body.text();

    const after = await scrape();
    const moved = (labels: Record<string, string>) =>
      seriesValue(after, "gateway_requests_total", labels) -
      seriesValue(before, "gateway_requests_total", labels);
    const ok = { result: "ok", code: "" };
    expect(moved({ label: "eth", family: "jsonrpc", method: "eth_blockNumber", ...ok })).toBe(6);
    expect(
      moved({
        label: "avax",
        family: "jsonrpc",
        method: "eth_blockNumber",
        result: "upstream",
        code: "NO_UPSTREAM",
      }),
    ).toBe(2);
    expect(
      moved({ label: "eth", family: "jsonrpc", method: "other", result: "client", code: "METHOD_NOT_FOUND" }),
    ).toBe(3);
    expect(
      moved({ label: "eth", family: "jsonrpc", method: "other", result: "client", code: "UNAUTHORIZED" }),
    ).toBe(1);
    expect(
      moved({
        label: "eth",
        family: "jsonrpc",
        method: "eth_blockNumber",
        result: "client",
        code: "RATE_LIMITED",
      }),
    ).toBe(2);
    expect(moved({ label: "eth", family: "jsonrpc", method: "batch", ...ok })).toBe(1);
    expect(moved({ label: "algo", family: "rest", method: "GET /v2/status", ...ok })).toBe(1);
    const rateLimited = (f: Exposition) =>
      seriesValue(f, "gateway_rate_limited_total", { label: "eth", client: "key" });
    expect(rateLimited(after) - rateLimited(before)).toBe(2);

    // durations and sizes: one observation per request, and the node's own time for those it answered
    // summed over the series that match: the duration histogram has a series per kind of call
    const count = (f: Exposition, name: string, labels: Record<string, string>) =>
      f.samples
        .filter(
          (s) => s.name === `${name}_count` && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
        )
        .reduce((sum, s) => sum + s.value, 0);
    expect(
      count(after, "gateway_request_duration_seconds", { label: "eth", family: "jsonrpc" }) -
        count(before, "gateway_request_duration_seconds", { label: "eth", family: "jsonrpc" }),
    ).toBe(13);
    // by kind of call: reads that reached a node, and refusals that did not
    for (const kind of ["read", "none", "batch"])
      expect(
        count(after, "gateway_request_duration_seconds", { label: "eth", class: kind }) -
          count(before, "gateway_request_duration_seconds", { label: "eth", class: kind }),
        kind,
      ).toBeGreaterThan(0);
    expect(
      count(after, "gateway_upstream_duration_seconds", { label: "eth", upstream: "eth-node" }) -
        count(before, "gateway_upstream_duration_seconds", { label: "eth", upstream: "eth-node" }),
    ).toBe(7);
    expect(
      // an upstream without a name of its own is named by its address everywhere (config/upstream-name.ts)
      count(after, "gateway_upstream_duration_seconds", { label: "algo", upstream: node.url }) -
        count(before, "gateway_upstream_duration_seconds", { label: "algo", upstream: node.url }),
    ).toBe(1);
  });

  it("counts WebSocket connections, subscriptions and messages in each direction", async () => {
    const before = await scrape();
    const client = new WebSocket(`ws://127.0.0.1:${proxy.port}/${KEYS.all}`, {
      headers: { host: `eth.${DOMAIN}` },
    });
    await new Promise((resolve, reject) => client.once("open", resolve).once("error", reject));
    const answered = new Promise<string>((resolve) =>
      client.once("message", (data) => resolve(String(data))),
    );
    client.send('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}');
    expect(JSON.parse(await answered)).toMatchObject({ id: 1, result: expect.any(String) });
    const during = await scrape();
    expect(seriesValue(during, "gateway_websocket_connections", { label: "eth" })).toBe(1);
    expect(seriesValue(during, "gateway_websocket_subscriptions", { label: "eth" })).toBe(1);
    const messages = (f: Exposition, direction: string) =>
      seriesValue(f, "gateway_websocket_messages_total", { label: "eth", direction });
    expect(messages(during, "in") - messages(before, "in")).toBe(1);
    expect(messages(during, "out") - messages(before, "out")).toBe(1);
    const subscribe = { label: "eth", family: "jsonrpc", method: "eth_subscribe", result: "ok", code: "" };
    expect(
      seriesValue(during, "gateway_requests_total", subscribe) -
        seriesValue(before, "gateway_requests_total", subscribe),
    ).toBe(1);
    client.close();
    await eventually(() => ws.openConnections() === 0, 2000, "the upstream socket closed");
    // at 0, not gone: a panel or an alert on it then reads 0, not "no data" (a broken scrape reads that)
    const after = await scrape();
    for (const name of ["gateway_websocket_connections", "gateway_websocket_subscriptions"])
      expect(after.samples.find((s) => s.name === name && s.labels.label === "eth")?.value, name).toBe(0);
  });

  it("shows each upstream's state, head, lag, latency, error ratio and calls in flight, and the process", async () => {
    const families = await scrape();
    expect(
      seriesValue(families, "gateway_upstream_state", {
        label: "eth",
        upstream: "eth-node",
        state: "healthy",
      }),
    ).toBe(1);
    expect(
      seriesValue(families, "gateway_upstream_state", {
        label: "eth",
        upstream: "eth-node",
        state: "failing",
      }),
    ).toBe(0);
    for (const name of [
      "gateway_upstream_lag_blocks",
      "gateway_upstream_latency_seconds",
      "gateway_upstream_error_ratio",
      "gateway_upstream_in_flight",
    ])
      expect(families.types.get(name), name).toBe("gauge");
    expect(
      seriesValue(families, "gateway_upstream_error_ratio", { label: "avax", upstream: deadNode }),
    ).toBeGreaterThan(0);
    // the dead node's two attempts failed, and it has no latency (rather than a 0 that looks fastest)
    expect(
      seriesValue(families, "gateway_upstream_attempts_total", {
        label: "avax",
        upstream: deadNode,
        outcome: "failed",
      }),
    ).toBe(2);
    expect(
      families.samples.some(
        (s) => s.name === "gateway_upstream_latency_seconds" && s.labels.upstream === deadNode,
      ),
    ).toBe(false);
    expect(
      seriesValue(families, "gateway_upstream_attempts_total", {
        label: "eth",
        upstream: "eth-node",
        outcome: "answered",
      }),
    ).toBeGreaterThan(0);
    expect(families.types.get("process_cpu_seconds")).toBe("counter");
    for (const name of ["process_resident_memory_bytes", "nodejs_eventloop_lag_seconds"])
      expect(families.types.get(name), name).toBe("gauge");
  });

  it("an upstream's counters go on from where they were after a reload (SIGHUP), never back to zero", async () => {
    const attempts = (families: Exposition, outcome: string) =>
      seriesValue(families, "gateway_upstream_attempts_total", {
        label: "avax",
        upstream: deadNode,
        outcome,
      });
    const before = await scrape();
    const failed = attempts(before, "failed") ?? 0;
    expect(failed).toBeGreaterThan(0);
    proxy.reload(config);
    const after = await scrape();
    expect(attempts(after, "failed")).toBe(failed);
    // a label's WebSocket gauges stay at 0 under the new config's counts (a connection was open earlier)
    for (const name of ["gateway_websocket_connections", "gateway_websocket_subscriptions"])
      expect(after.samples.find((s) => s.name === name && s.labels.label === "eth")?.value, name).toBe(0);
    // and they go on counting
    expect((await call("avax", KEYS.all, rpc("eth_blockNumber"))).status).toBe(503);
    expect(attempts(await scrape(), "failed")).toBe(failed + 1);
  });

  it("carries no key, path, host or address in any label", async () => {
    await scrape();
    for (const key of [...Object.values(KEYS), SLOW_KEY]) expect(text).not.toContain(key.slice(0, 12));
    expect(text).not.toContain("/v2/status?");
    expect(text).not.toContain("round=1");
    expect(text).not.toContain(DOMAIN);
    // no caller's address: an upstream without a name of its own is named by its address, as the operator
    // API and the logs name it (the deployment's, not a caller's)
    const named = text.replaceAll(`upstream="${node.url}"`, "").replaceAll(`upstream="${deadNode}"`, "");
    expect(named).not.toMatch(/127\.0\.0\.1|::1|localhost/);
    // every label value comes from the registry, the error table or the deployment's names
    const values = new Set(parseExposition(text).samples.flatMap((s) => Object.values(s.labels)));
    for (const value of values)
      expect(value, `${value} in ${text.split("\n").find((l) => l.includes(`"${value}"`))}`).toMatch(
        /^[A-Za-z0-9_./{} +:*-]*$/,
      );
  });
});
