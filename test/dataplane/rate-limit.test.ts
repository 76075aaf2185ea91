import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

const SLOW_KEY = "FNtestSlowKey000000000000000000";
const BATCH_KEY = "FNtestBatchKey00000000000000000";
const REFUSED_KEY = "FNtestRefusedKey000000000000000";

describe("rate limits", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    gw = await startGateway({
      upstreams: { eth: [node.url], bsc: [node.url] },
      keys: [
        { key: SLOW_KEY, networks: "*", rate: { perSecond: 0.5, burst: 3 } },
        { key: BATCH_KEY, networks: "*", rate: { perSecond: 0.5, burst: 3 } },
        { key: REFUSED_KEY, networks: "*", rate: { perSecond: 0.5, burst: 2 } },
      ],
      publicHosts: { "bsc-public.gw.test": "bsc" },
      trustedProxies: ["127.0.0.1"],
      limits: { publicRate: { perSecond: 0.5, burst: 2 } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("a key over its token bucket gets 429 with Retry-After and RateLimit headers", async () => {
    const statuses: number[] = [];
    let last: Awaited<ReturnType<RunningGateway["call"]>> | undefined;
    for (let i = 0; i < 4; i++) {
      last = await gw.call("eth", `/${SLOW_KEY}/`, { body: rpcBody("eth_blockNumber", [], i) });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(last?.headers["retry-after"]).toBe("2");
    expect(last?.headers["ratelimit-limit"]).toBe("3");
    expect(last?.headers["ratelimit-remaining"]).toBe("0");
    expect(last?.json).toMatchObject({
      id: 3,
      // the key's own rate, in calls (not its plan's compute units)
      error: {
        code: -32005,
        data: { code: "RATE_LIMITED", retryAfter: 2, unit: "calls", perSecond: 0.5, burst: 3 },
      },
    });
    expect(node.requests).toHaveLength(3);
  });

  it("a batch of more calls than the burst gets 413 REQUEST_OVER_BURST, not a 429 that no wait would clear", async () => {
    const batch = (n: number) =>
      JSON.stringify(Array.from({ length: n }, (_, i) => JSON.parse(rpcBody("eth_blockNumber", [], i + 1))));
    const before = node.requests.length;
    const over = await gw.call("eth", `/${BATCH_KEY}/`, { body: batch(4) });
    expect(over.status).toBe(413);
    expect(over.headers["retry-after"]).toBeUndefined();
    // a batch's clients read an array by id: each call gets the error
    expect(over.json).toMatchObject(
      [1, 2, 3, 4].map((id) => ({
        id,
        error: { code: -32005, data: { code: "REQUEST_OVER_BURST", cost: 4, burst: 3, unit: "calls" } },
      })),
    );
    expect(node.requests.length).toBe(before);
    // its access line says the gateway refused all four, not none
    const line = gw.logs.map((l) => JSON.parse(l)).find((l) => l.requestId === over.headers["x-request-id"]);
    expect(line).toMatchObject({ batch: 4, refused: 4, error: "REQUEST_OVER_BURST", status: 413 });
    // it took nothing from the bucket: a batch the burst holds goes through at once
    const within = await gw.call("eth", `/${BATCH_KEY}/`, { body: batch(3) });
    expect(within.status).toBe(200);
  });

  it("a batch of calls all refused on their own keeps their refusals when its rate is spent, never an empty array", async () => {
    const body = JSON.stringify([
      { jsonrpc: "2.0", id: "a", method: "admin_peers", params: [] },
      { jsonrpc: "2.0", id: "b", method: "admin_peers", params: [] },
    ]);
    expect((await gw.call("eth", `/${REFUSED_KEY}/`, { body })).status).toBe(200);
    const limited = await gw.call("eth", `/${REFUSED_KEY}/`, { body });
    expect(limited.status).toBe(429);
    expect(limited.headers["retry-after"]).toBeDefined();
    expect(limited.json).toMatchObject([
      { id: "a", error: { data: { code: "METHOD_NOT_FOUND" } } },
      { id: "b", error: { data: { code: "METHOD_NOT_FOUND" } } },
    ]);
    // all notifications: nothing to answer by id, so the error alone
    const notes = JSON.stringify([{ jsonrpc: "2.0", method: "eth_blockNumber", params: [] }]);
    const alone = await gw.call("eth", `/${REFUSED_KEY}/`, { body: notes });
    expect(alone.status).toBe(429);
    expect(alone.json).toMatchObject({ id: null, error: { data: { code: "RATE_LIMITED" } } });
  });

  it("a caller without a key refused for its path is answered at once, its body unread (id null)", async () => {
    const r = await gw.call("bsc", "/admin", {
      host: "bsc-public.gw.test",
      body: rpcBody("eth_blockNumber", [], 5),
    });
    expect(r.status).toBe(404);
    expect(r.json).toMatchObject({ id: null, error: { data: { code: "NOT_FOUND" } } });
  });

  it("public endpoints are limited per client IP, from X-Forwarded-For only behind a trusted proxy", async () => {
    const fromClient = (ip: string) =>
      gw.call("bsc", "/", {
        host: "bsc-public.gw.test",
        body: rpcBody("eth_blockNumber"),
        headers: { "x-forwarded-for": `${ip}, 127.0.0.1` },
      });
    expect((await fromClient("203.0.113.1")).status).toBe(200);
    expect((await fromClient("203.0.113.1")).status).toBe(200);
    expect((await fromClient("203.0.113.1")).status).toBe(429);
    // another client behind the same proxy has its own bucket
    expect((await fromClient("203.0.113.2")).status).toBe(200);
  });
});
