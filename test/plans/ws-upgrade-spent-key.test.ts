import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PLAN_FIELDS } from "../../src/config/defaults.js";
import type { PlanSpec } from "../../src/config/types.js";
import { createLogger } from "../../src/log.js";
import { SharedQuotaLedger } from "../../src/plans/shared-quotas.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, type RunningGateway, rpcBody, startGateway, TEST_PLANS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { needServices, SHARED_REDIS_URL } from "../support/services.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A key whose quota is spent is refused at a WebSocket's upgrade with the error an HTTP call of it gets
// (docs/plans.md): 402 QUOTA_EXCEEDED with its Retry-After. It was let in, and only its first message was
// refused: a client that reconnects after a 4402 connected at once, over and over. A spent rate is not
// refused there (below). eth_blockNumber costs 10 compute units (docs/compute-units.md).

const plan = (fields: Partial<PlanSpec>): PlanSpec => ({
  ...PLAN_FIELDS,
  computeUnitRate: { perSecond: 1_000_000, burst: 1_000_000 },
  ...fields,
});
const WIDE = { perSecond: 10_000, burst: 10_000 };
const SPENT = "FNupgSpent00000000000000000000";
const CALLS = "FNupgCalls00000000000000000000";
const UNITS = "FNupgUnits00000000000000000000";
const ROOMY = "FNupgRoomy00000000000000000000";

describe("a WebSocket upgrade by a key already out of quota, or of rate", () => {
  let node: LoopbackNode;
  let ws: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void = () => {};
  const send = (key: string) => gw.call("eth", `/${key}`, { body: rpcBody("eth_blockNumber") });
  const url = (key: string) => `ws://eth.${DOMAIN}:${gw.port}/${key}`;

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    ws = await startLoopbackWsNode({ results: { eth_blockNumber: "0x10" } });
    restore = resolveTestHosts();
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, ws: ws.wsUrl }] },
      plans: {
        ...TEST_PLANS,
        daily: plan({ dailyQuota: 20 }),
        slow: plan({ computeUnitRate: { perSecond: 0.01, burst: 20 } }),
        open: plan({}),
      },
      keys: [
        { key: SPENT, networks: "*", plan: "daily", rate: WIDE },
        { key: CALLS, networks: "*", plan: "open", rate: { perSecond: 0.01, burst: 2 } },
        { key: UNITS, networks: "*", plan: "slow", rate: WIDE },
        { key: ROOMY, networks: "*", plan: "slow", rate: { perSecond: 0.01, burst: 2 } },
      ],
    });
  });
  afterAll(async () => {
    restore();
    await gw?.close();
    await Promise.all([node?.close(), ws?.close()]);
  });

  it("a spent quota: 402 QUOTA_EXCEEDED at the upgrade, as over HTTP, with the day's Retry-After", async () => {
    expect((await send(SPENT)).status).toBe(200);
    expect((await send(SPENT)).status).toBe(200); // 20: the day's quota
    const http = await send(SPENT);
    expect(http.status).toBe(402);
    const refused = await Client.refused(url(SPENT));
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({
      error: { code: -32046, data: { code: "QUOTA_EXCEEDED", period: "day", limit: 20 } },
    });
    expect(
      Math.abs(Number(refused.headers["retry-after"]) - Number(http.headers["retry-after"])),
    ).toBeLessThan(3);
  });

  // a rate is a moment's: an SDK whose socket failed to open does not open it again (ethers' and viem's
  // WebSocket providers), where a message over the rate is refused on its own
  it("a spent call rate, or compute-unit rate: the upgrade opens, and a message over the rate gets 429 RATE_LIMITED's error", async () => {
    for (const [key, unit] of [
      [CALLS, "calls"],
      [UNITS, "compute units"],
    ] as const) {
      expect((await send(key)).status).toBe(200);
      expect((await send(key)).status).toBe(200);
      const socket = await Client.open(url(key));
      try {
        const answer = await socket.call("eth_blockNumber");
        expect(answer).toMatchObject({ error: { data: { code: "RATE_LIMITED", unit } } });
      } finally {
        socket.close();
      }
    }
  });

  it("an upgrade that passes takes nothing from the rate or the quota", async () => {
    const socket = await Client.open(url(ROOMY));
    socket.ws.close();
    await socket.closed;
    // the burst of two calls (and 20 compute units) is whole
    expect((await send(ROOMY)).status).toBe(200);
    expect((await send(ROOMY)).status).toBe(200);
  });
});

const redis = await needServices("redis");

describe.skipIf(redis.skip)("a quota shared through Redis by two proxies", () => {
  it("spent through one proxy, refuses the key's upgrade at the other", async () => {
    const node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    const ws = await startLoopbackWsNode({ results: { eth_blockNumber: "0x10" } });
    const restore = resolveTestHosts();
    // a key of its own on the shared Redis (its id, the first 8 characters, is the quota's scope)
    const key = `FN${randomBytes(3).toString("hex")}upgShared0000000000`;
    const ledger = () =>
      new SharedQuotaLedger(
        { redis: SHARED_REDIS_URL, leaseMs: 1, fallbackShare: 1 },
        createLogger("silent"),
        () => {},
      );
    const [quotasA, quotasB] = [ledger(), ledger()];
    const start = (quotas: SharedQuotaLedger) =>
      startGateway({
        upstreams: { eth: [{ url: node.url, ws: ws.wsUrl }] },
        plans: {
          ...TEST_PLANS,
          daily: plan({ dailyQuota: 20, computeUnitRate: { perSecond: 10, burst: 1e6 } }),
        },
        keys: [{ key, networks: "*", plan: "daily", rate: WIDE }],
        quotas,
      });
    const [a, b] = [await start(quotasA), await start(quotasB)];
    try {
      await eventually(() => quotasA.shared && quotasB.shared, 2_000, "Redis reached");
      const send = (gw: RunningGateway) => gw.call("eth", `/${key}`, { body: rpcBody("eth_blockNumber") });
      expect((await send(a)).status).toBe(200);
      expect((await send(a)).status).toBe(200); // 20: the day's quota
      expect((await send(b)).status).toBe(402);
      const refused = await Client.refused(`ws://eth.${DOMAIN}:${b.port}/${key}`);
      expect(refused.status).toBe(402);
      expect(refused.body).toMatchObject({ error: { data: { code: "QUOTA_EXCEEDED", period: "day" } } });
    } finally {
      restore();
      await Promise.all([a.close(), b.close()]);
      await Promise.all([quotasA.close(), quotasB.close()]);
      await Promise.all([node.close(), ws.close()]);
    }
  });
});
