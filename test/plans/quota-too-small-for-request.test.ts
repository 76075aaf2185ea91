import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PLANS, PLAN_FIELDS } from "../../src/config/defaults.js";
import type { PlanSpec } from "../../src/config/types.js";
import { DOMAIN, type RunningGateway, rpcBody, startGateway, TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A request that costs more than its quota has left, while units remain (docs/plans.md, "Quotas"): a batch
// is held whole and refused whole, and the refusal says what it needs and what remains (a client splits it),
// not that the quota is spent; over a WebSocket the connection stays open while units remain, and is closed
// with 4402 once nothing does. eth_blockNumber costs 10 (docs/compute-units.md).

const plan = (fields: Partial<PlanSpec>): PlanSpec => ({
  ...PLAN_FIELDS,
  computeUnitRate: { perSecond: 1_000_000, burst: 1_000_000 },
  ...fields,
});
const RATE = { perSecond: 10_000, burst: 10_000 };
const HTTP_KEY = "FNquotaLeftHttp000000000000000";
// a key id is its first eight characters: each key here has its own
const WS_KEY = "FNsockLeftQuota000000000000000";

const batchOf = (n: number, first = 1) =>
  JSON.stringify(
    Array.from({ length: n }, (_, i) => ({ jsonrpc: "2.0", id: first + i, method: "eth_blockNumber" })),
  );

interface Refusal {
  id: unknown;
  error: { code: number; message: string; data: Record<string, unknown> };
}

describe("a request larger than what its quota has left", () => {
  let node: LoopbackNode;
  let ws: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void = () => {};

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1" }));
    ws = await startLoopbackWsNode({ results: { eth_blockNumber: "0x10" } });
    restore = resolveTestHosts();
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, ws: ws.wsUrl }] },
      plans: { ...DEFAULT_PLANS, small: plan({ dailyQuota: 100 }), tiny: plan({ dailyQuota: 40 }) },
      keys: [
        ...TEST_KEYS,
        { key: HTTP_KEY, networks: "*", plan: "small", rate: RATE },
        { key: WS_KEY, networks: "*", plan: "tiny", rate: RATE },
      ],
    });
  });
  afterAll(async () => {
    restore();
    await gw?.close();
    await Promise.all([node?.close(), ws?.close()]);
  });

  it("over HTTP: a batch is refused whole, saying the units it needs and those that remain", async () => {
    const one = () => gw.call("eth", `/${HTTP_KEY}`, { body: rpcBody("eth_blockNumber") });
    expect((await one()).status).toBe(200); // 90 remain
    const refused = await gw.call("eth", `/${HTTP_KEY}`, { body: batchOf(10) }); // 100
    expect(refused.status).toBe(402);
    const answers = refused.json as Refusal[];
    expect(answers).toHaveLength(10);
    for (const answer of answers) {
      expect(answer.error.code).toBe(-32046);
      expect(answer.error.data).toMatchObject({
        code: "QUOTA_EXCEEDED",
        period: "day",
        limit: 100,
        needed: 100,
        remaining: 90,
      });
      expect(answer.error.message).not.toMatch(/spent/);
    }
    // what it needs, split to fit, is served: nine calls spend the 90 left
    expect((await gw.call("eth", `/${HTTP_KEY}`, { body: batchOf(9) })).status).toBe(200);
    const spent = await one();
    expect(spent.status).toBe(402);
    expect((spent.json as Refusal).error.data).toMatchObject({ needed: 10, remaining: 0 });
  });

  it("over a WebSocket: open while units remain, closed with 4402 once none do", async () => {
    const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${WS_KEY}`);
    try {
      expect((await socket.call("eth_blockNumber")).result).toBe("0x10"); // 30 remain
      socket.send(batchOf(4, 1)); // 40
      const text = await socket.waitFor((t) => t.startsWith("["));
      const answers = JSON.parse(text) as Refusal[];
      expect(answers.map((a) => a.error.data.code)).toEqual(Array(4).fill("QUOTA_EXCEEDED"));
      expect(answers[0]?.error.data).toMatchObject({ needed: 40, remaining: 30 });
      // the connection goes on: what fits is served
      for (let i = 0; i < 3; i++) expect((await socket.call("eth_blockNumber")).result).toBe("0x10");
      const refused = await socket.call("eth_blockNumber");
      expect(refused.error?.data).toMatchObject({ code: "QUOTA_EXCEEDED", needed: 10, remaining: 0 });
      expect((await socket.closed).code).toBe(4402);
    } finally {
      socket.close();
    }
  });
});
