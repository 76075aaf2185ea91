import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { eventually } from "../support/eventually.js";
import { type FaultyNode, startFaultyNode } from "../support/faulty-node.js";
import { DOMAIN, TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder } from "../support/loopback-node.js";

// docs/deployment.md: the balancer asks each proxy's operator listener `/readyz`. HTTP requires every
// server to answer HEAD as it answers GET, without the body (RFC 9110, 9.1 and 9.3.2), and health checks
// are often HEAD (HAProxy's `option httpchk HEAD /readyz`): the operator API answered 405, so a balancer
// checking that way saw every proxy down, ready or not.

describe("the operator API answers HEAD as it answers GET", () => {
  let node: FaultyNode;
  let proxy: RunningProxy;

  const operator = async (method: "GET" | "HEAD" | "POST", path: string, body?: unknown) => {
    const r = await request(`http://127.0.0.1:${proxy.operatorPort}${path}`, {
      method,
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
    });
    return { status: r.statusCode, headers: r.headers, text: await r.body.text() };
  };

  beforeAll(async () => {
    node = await startFaultyNode(() => jsonRpcResponder({ eth_blockNumber: "0x10" }));
    proxy = await runProxy(
      {
        ...DEFAULT_CONFIG,
        domain: DOMAIN,
        listen: { host: "127.0.0.1", port: 0 },
        operator: { listen: { host: "127.0.0.1", port: 0 } },
        keys: TEST_KEYS,
        upstreams: { eth: [{ url: node.url, name: "a" }] },
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 100, probeTimeoutMs: 300 },
        log: { level: "silent", access: false },
      },
      createLogger("silent", () => {}),
    );
    await eventually(async () => (await operator("GET", "/readyz")).status === 200, 3000, "ready");
  });
  afterAll(async () => {
    await proxy?.close();
    await node?.close();
  });

  it("HEAD /readyz, /healthz, /upstreams and /metrics: GET's status and headers, no body", async () => {
    for (const path of ["/readyz", "/healthz", "/upstreams", "/metrics"]) {
      const get = await operator("GET", path);
      const head = await operator("HEAD", path);
      expect({ path, status: head.status, type: head.headers["content-type"], text: head.text }).toEqual({
        path,
        status: get.status,
        type: get.headers["content-type"],
        text: "",
      });
      expect(get.status).toBe(200);
    }
  });

  it("HEAD /readyz is 503 while the proxy cannot serve", async () => {
    expect((await operator("POST", "/upstreams/cordon", { label: "eth", upstream: "a" })).status).toBe(200);
    try {
      expect((await operator("HEAD", "/readyz")).status).toBe(503);
    } finally {
      await operator("POST", "/upstreams/uncordon", { label: "eth", upstream: "a" });
    }
  });

  it("other methods are still refused, naming GET and HEAD", async () => {
    const put = await request(`http://127.0.0.1:${proxy.operatorPort}/readyz`, { method: "PUT" });
    expect(put.statusCode).toBe(405);
    expect(put.headers.allow).toBe("GET, HEAD");
    await put.body.text();
  });
});
