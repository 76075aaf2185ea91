import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PLANS, PLAN_FIELDS } from "../../src/config/defaults.js";
import type { PlanSpec } from "../../src/config/types.js";
import { keyHash } from "../../src/keys/digest.js";
import type { Principal } from "../../src/keys/types.js";
import { createLogger } from "../../src/log.js";
import { QuotaHold } from "../../src/plans/quota-hold.js";
import { LocalQuotaLedger, type QuotaCrossing } from "../../src/plans/quota-ledger.js";
import { SharedQuotaLedger } from "../../src/plans/shared-quotas.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, type RunningGateway, rpcBody, startGateway, TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { needServices, SHARED_REDIS_URL } from "../support/services.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// Quotas in compute units (docs/plans.md): a day's and a month's, per key, refused with 402 QUOTA_EXCEEDED at
// the exact call that would pass them, with Retry-After at the period's end. eth_blockNumber costs 10,
// eth_chainId 5 and eth_getLogs 75 (registry/networks.yaml, docs/compute-units.md).

const plan = (fields: Partial<PlanSpec>): PlanSpec => ({
  ...PLAN_FIELDS,
  computeUnitRate: { perSecond: 1_000_000, burst: 1_000_000 },
  ...fields,
});
const RATE = { perSecond: 10_000, burst: 10_000 };
const DAILY = "FNquotaDaily000000000000000000";
const DAILY_TOO = "FNotherDaily000000000000000000";
const MONTHLY = "FNquotaMonthly0000000000000000";
const FAILING = "FNquotaFailing0000000000000000";
const SOCKET = "FNquotaSocket00000000000000000";
const NARROW = "FNquotaNarrow00000000000000000";
// a key id is its first eight characters: each key here has its own
const SPENT = "FNspentRate0000000000000000000";

/** Seconds from now to the next UTC midnight, and to the first of next month. */
function untilReset(period: "day" | "month"): number {
  const now = new Date();
  const at =
    period === "day"
      ? Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)
      : Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return (at - now.getTime()) / 1000;
}

interface RpcError {
  error?: { code: number; data?: Record<string, unknown> };
}

describe("quotas in compute units", () => {
  let node: LoopbackNode;
  let ws: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void = () => {};
  const send = (key: string, method: string, params: unknown[] = []) =>
    gw.call("eth", `/${key}`, { body: rpcBody(method, params) });

  beforeAll(async () => {
    node = await startLoopbackNode(
      jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1", eth_getLogs: [] }),
    );
    ws = await startLoopbackWsNode({ results: { eth_blockNumber: "0x10" } });
    restore = resolveTestHosts();
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, ws: ws.wsUrl }], bsc: [`http://127.0.0.1:9`] },
      plans: {
        ...DEFAULT_PLANS,
        daily: plan({ dailyQuota: 100 }),
        monthly: plan({ monthlyQuota: 30 }),
        narrow: plan({ computeUnitRate: { perSecond: 50, burst: 50 } }),
        spent: plan({ dailyQuota: 100, computeUnitRate: { perSecond: 1, burst: 300 } }),
      },
      keys: [
        ...TEST_KEYS,
        { key: DAILY, networks: "*", plan: "daily", rate: RATE },
        { key: DAILY_TOO, networks: "*", plan: "daily", rate: RATE },
        { key: MONTHLY, networks: "*", plan: "monthly", rate: RATE },
        { key: FAILING, networks: "*", plan: "monthly", rate: RATE },
        { key: SOCKET, networks: "*", plan: "monthly", rate: RATE },
        { key: NARROW, networks: "*", plan: "narrow", rate: RATE },
        { key: SPENT, networks: "*", plan: "spent", rate: RATE },
      ],
    });
  });
  afterAll(async () => {
    restore();
    await gw?.close();
    await Promise.all([node?.close(), ws?.close()]);
  });

  it("serves a day's quota to the unit and refuses the exact call that would pass it, with the day's reset", async () => {
    expect((await send(DAILY, "eth_blockNumber")).status).toBe(200); // 10
    expect((await send(DAILY, "eth_blockNumber")).status).toBe(200); // 20
    expect((await send(DAILY, "eth_getLogs", [{ fromBlock: "0x1", toBlock: "0x2" }])).status).toBe(200); // 95
    const refused = await send(DAILY, "eth_blockNumber"); // 105: over
    expect(refused.status).toBe(402);
    const error = (refused.json as RpcError).error;
    expect(error?.code).toBe(-32046);
    expect(error?.data).toMatchObject({ code: "QUOTA_EXCEEDED", period: "day", limit: 100, per: "key" });
    const retryAfter = Number(refused.headers["retry-after"]);
    expect(Math.abs(retryAfter - untilReset("day"))).toBeLessThanOrEqual(2);
    const resetsAt = Date.parse(String(error?.data?.resetsAt));
    expect(new Date(resetsAt).toISOString().slice(11)).toBe("00:00:00.000Z");
    // what still fits is served: 5 more reach 100 exactly, and then nothing does
    expect((await send(DAILY, "eth_chainId")).status).toBe(200); // 100
    expect((await send(DAILY, "eth_chainId")).status).toBe(402);
    // the key's quota is its own: another key of the same plan is served
    expect((await send(DAILY_TOO, "eth_blockNumber")).status).toBe(200);
    // the access line names the refusal, and the key only by its id
    const line = gw.logs.find((l) => l.includes('"error":"QUOTA_EXCEEDED"'));
    expect(line).toContain(`"key":"${DAILY.slice(0, 8)}"`);
    expect(line).not.toContain(DAILY);
  });

  it("a spent quota's refusals take nothing from the rate: the caller is told 402 every time, never 429", async () => {
    for (let i = 0; i < 10; i++) expect((await send(SPENT, "eth_blockNumber")).status).toBe(200); // 100
    // 25 refusals of 10 units each would pass the compute-unit burst's 300 left at 200
    const statuses = new Set<number>();
    for (let i = 0; i < 25; i++) statuses.add((await send(SPENT, "eth_blockNumber")).status);
    expect([...statuses]).toEqual([402]);
  });

  it("a call that costs more compute units than the plan's burst gets 413 REQUEST_OVER_BURST, and costs nothing", async () => {
    const over = await send(NARROW, "eth_getLogs", [{ fromBlock: "0x1", toBlock: "0x2" }]); // 75 > 50
    expect(over.status).toBe(413);
    expect(over.headers["retry-after"]).toBeUndefined();
    expect((over.json as RpcError).error?.data).toMatchObject({
      code: "REQUEST_OVER_BURST",
      cost: 75,
      burst: 50,
      unit: "compute units",
    });
    // five calls of 10 fill the burst exactly: the refusal took nothing from it
    for (let i = 0; i < 5; i++) expect((await send(NARROW, "eth_blockNumber")).status).toBe(200);
  });

  it("a batch the quota cannot hold is refused call by call, each by its id, with the quota's status", async () => {
    // 90 of DAILY_TOO's 100 compute units are left after the first test; the calls that pass cost 10 + 75 + 10
    const batch = JSON.stringify([
      { jsonrpc: "2.0", id: "a", method: "eth_blockNumber", params: [] },
      { jsonrpc: "2.0", id: 7, method: "eth_getLogs", params: [{ fromBlock: "0x1", toBlock: "0x2" }] },
      { jsonrpc: "2.0", method: "eth_blockNumber", params: [] },
      { jsonrpc: "2.0", id: 9, method: "admin_peers", params: [] },
    ]);
    const refused = await gw.call("eth", `/${DAILY_TOO}`, { body: batch });
    expect(refused.status).toBe(402);
    expect(refused.headers["retry-after"]).toBeDefined();
    const answers = refused.json as { id: unknown; error: { data: { code: string } } }[];
    // the call refused on its own keeps its own refusal, in its place; the notification gets no answer
    expect(answers.map((a) => [a.id, a.error.data.code])).toEqual([
      ["a", "QUOTA_EXCEEDED"],
      [7, "QUOTA_EXCEEDED"],
      [9, "METHOD_NOT_FOUND"],
    ]);
  });

  it("a month's quota resets on the first of next month; a REST-style body before the network is known", async () => {
    for (let i = 0; i < 3; i++) expect((await send(MONTHLY, "eth_blockNumber")).status).toBe(200);
    const refused = await send(MONTHLY, "eth_blockNumber");
    expect(refused.status).toBe(402);
    expect((refused.json as RpcError).error?.data).toMatchObject({ period: "month", limit: 30 });
    expect(Math.abs(Number(refused.headers["retry-after"]) - untilReset("month"))).toBeLessThanOrEqual(2);
  });

  it("a call the node failed costs nothing: the units reserved for it are given back", async () => {
    // bsc's only node refuses connections: the call fails, and its 10 units return to the quota
    for (let i = 0; i < 4; i++) {
      const failed = await gw.call("bsc", `/${FAILING}`, { body: rpcBody("eth_blockNumber") });
      expect(failed.status).toBeGreaterThanOrEqual(500);
    }
    for (let i = 0; i < 3; i++) expect((await send(FAILING, "eth_blockNumber")).status).toBe(200);
    expect((await send(FAILING, "eth_blockNumber")).status).toBe(402);
  });

  it("over a WebSocket: the call that passes the quota is answered with -32046, and the socket closed with 4402", async () => {
    const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${SOCKET}`);
    for (let i = 0; i < 3; i++) expect((await socket.call("eth_blockNumber")).result).toBe("0x10");
    const refused = await socket.call("eth_blockNumber");
    expect(refused.error?.code).toBe(-32046);
    expect(refused.error?.data?.code).toBe("QUOTA_EXCEEDED");
    expect((await socket.closed).code).toBe(4402);
    // and the HTTP path agrees: the quota is the key's, whichever transport spent it
    expect((await send(SOCKET, "eth_chainId")).status).toBe(402);
  });
});

describe("a quota per account", () => {
  it("is spent by every key of the account on that plan together; another account's key, or the account's key of another plan, goes on", async () => {
    const node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    const team = (keyId: string, accountId: string, onPlan = "team"): Principal => ({
      keyId,
      quotaScope: keyId,
      accountId,
      networks: "*",
      archive: false,
      plan: onPlan,
      rate: RATE,
      rules: undefined,
    });
    const keys = new Map([
      ["FNteamFirst0000000000000000000", team("FNteamFi", "account:7")],
      ["FNteamSecond000000000000000000", team("FNteamSe", "account:7")],
      ["FNteamOther0000000000000000000", team("FNteamOt", "account:8")],
      // the same account, on a larger plan whose quota is the account's too: a quota of its own
      ["FNteamLarger000000000000000000", team("FNteamLa", "account:7", "larger")],
    ]);
    const byDigest = new Map([...keys].map(([key, principal]) => [keyHash(key), principal]));
    const gw = await startGateway({
      upstreams: { eth: [node.url] },
      plans: {
        ...DEFAULT_PLANS,
        team: plan({ dailyQuota: 30, quotaPer: "account" }),
        larger: plan({ dailyQuota: 1_000, quotaPer: "account" }),
      },
      keyStore: { lookup: (digest) => byDigest.get(digest) },
    });
    try {
      const send = (key: string) => gw.call("eth", `/${key}`, { body: rpcBody("eth_blockNumber") });
      // the account's key of the larger plan spends 30 units first: none of the team plan's
      for (let i = 0; i < 3; i++) expect((await send("FNteamLarger000000000000000000")).status).toBe(200);
      expect((await send("FNteamFirst0000000000000000000")).status).toBe(200);
      expect((await send("FNteamFirst0000000000000000000")).status).toBe(200);
      expect((await send("FNteamSecond000000000000000000")).status).toBe(200); // 30: the account's quota
      const refused = await send("FNteamSecond000000000000000000");
      expect(refused.status).toBe(402);
      // the key spent 10 of 30: its refusal says whose quota is spent
      expect(refused.json).toMatchObject({
        error: { data: { code: "QUOTA_EXCEEDED", per: "account", limit: 30 } },
      });
      expect((await send("FNteamFirst0000000000000000000")).status).toBe(402);
      expect((await send("FNteamOther0000000000000000000")).status).toBe(200);
      expect((await send("FNteamLarger000000000000000000")).status).toBe(200);
      // and the larger plan's spending never lets the smaller plan's keys past theirs
      expect((await send("FNteamFirst0000000000000000000")).status).toBe(402);
    } finally {
      await gw.close();
      await node.close();
    }
  });
});

const redis = await needServices("redis");

describe.skipIf(redis.skip)("a quota shared through Redis", () => {
  it("holds over a WebSocket whose calls wait for a lease: in order, and the socket closed at the quota", async () => {
    const node = await startLoopbackWsNode({ results: { eth_blockNumber: "0x10" } });
    const http = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    // a key of its own on the shared Redis (its id, the first 8 characters, is the quota's scope): its
    // counters are new, whatever ran before
    const key = `FN${randomBytes(3).toString("hex")}sharedQuota0000000000`;
    const quotas = new SharedQuotaLedger(
      { redis: SHARED_REDIS_URL, leaseMs: 1, fallbackShare: 1 },
      createLogger("silent"),
      () => {},
    );
    const restore = resolveTestHosts();
    // a rate of 10 units a second, at 1 ms a lease: each call waits for a lease of its own from Redis
    const gw = await startGateway({
      upstreams: { eth: [{ url: http.url, ws: node.wsUrl }] },
      plans: {
        ...DEFAULT_PLANS,
        leased: plan({ dailyQuota: 50, computeUnitRate: { perSecond: 10, burst: 1e6 } }),
      },
      keys: [{ key, networks: "*", plan: "leased", rate: RATE }],
      quotas,
    });
    try {
      await eventually(() => quotas.shared, 2_000, "Redis reached");
      const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${key}`);
      // seven calls at once: five fit in 50 units, the sixth is refused, and the socket closes
      for (let id = 1; id <= 7; id++) socket.send(rpcBody("eth_blockNumber", [], id));
      const answers = await Promise.all([1, 2, 3, 4, 5, 6].map((id) => socket.answerTo(String(id))));
      expect(answers.slice(0, 5).map((a) => a.result)).toEqual(["0x10", "0x10", "0x10", "0x10", "0x10"]);
      expect(answers[5]?.error?.data?.code).toBe("QUOTA_EXCEEDED");
      expect((await socket.closed).code).toBe(4402);
      // and over HTTP, the same quota
      expect((await gw.call("eth", `/${key}`, { body: rpcBody("eth_blockNumber") })).status).toBe(402);
    } finally {
      restore();
      await gw.close();
      await quotas.close();
      await Promise.all([node.close(), http.close()]);
    }
  });
});

describe.skipIf(redis.skip)("a quota lowered by a reload, while leases from Redis are held", () => {
  it("holds at once: a lease is spent only as far as the new quota goes", async () => {
    const quotas = new SharedQuotaLedger(
      { redis: SHARED_REDIS_URL, leaseMs: 2_000, fallbackShare: 1 },
      createLogger("silent"),
      () => {},
    );
    try {
      await eventually(() => quotas.shared, 2_000, "Redis reached");
      const scope = `lowered-${randomBytes(4).toString("hex")}`;
      // 100 units a second: a lease of 200 units, of which each call spends 10
      const take = (daily: number) => quotas.take(scope, { daily, monthly: 0 }, 10, 100);
      for (let i = 0; i < 3; i++) expect((await take(1_000)).allowed).toBe(true);
      // the operator lowers the day's quota to 45 units: one call more fits, then the quota is spent
      expect((await take(45)).allowed).toBe(true);
      const refused = await take(45);
      expect(refused).toMatchObject({ allowed: false, period: "day", limit: 45 });
    } finally {
      await quotas.close();
    }
  });
});

describe.skipIf(redis.skip)("a small quota shared by two instances", () => {
  it("announces 80 % of what was spent, not leased; refuses at most a lease each early; a stop gives its lease back", async () => {
    const crossed: { threshold: number; spent: number }[] = [];
    let spent = 0;
    const ledger = () =>
      new SharedQuotaLedger(
        { redis: SHARED_REDIS_URL, leaseMs: 2_000, fallbackShare: 1 },
        createLogger("silent"),
        (c) => crossed.push({ threshold: c.threshold, spent }),
      );
    const [a, b] = [ledger(), ledger()];
    try {
      await eventually(() => a.shared && b.shared, 2_000, "Redis reached");
      const scope = `small-${randomBytes(4).toString("hex")}`;
      const limits = { daily: 1_000, monthly: 0 };
      // 1,000 units a second: a lease sized by the rate alone would be 2,000 units, twice the quota
      const take = async (ledger: SharedQuotaLedger) => {
        const decision = await ledger.take(scope, limits, 10, 1_000);
        if (decision.allowed) spent += 10;
        return decision.allowed;
      };
      let refusedAt: number | undefined;
      for (let i = 0; i < 200 && refusedAt === undefined; i++)
        if (!(await take(i % 2 === 0 ? a : b))) refusedAt = spent;
      // what the other instance held unspent is refused early: a lease, a fiftieth of the quota
      expect(refusedAt).toBeGreaterThanOrEqual(1_000 - 2 * 20);
      const eighty = crossed.find((c) => c.threshold === 80);
      expect(eighty?.spent).toBeGreaterThanOrEqual(800);
      expect(eighty?.spent).toBeLessThanOrEqual(800 + 4 * 20);
      // a stops, and gives back what it leased and did not spend: b spends the quota to the unit
      await a.close();
      while (await take(b));
      expect(spent).toBe(1_000);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe.skipIf(redis.skip)("spending told when a lease is given back", () => {
  it("crosses 80 % there too: an instance that stops at 80 % announces it", async () => {
    const crossed: number[] = [];
    const ledger = () =>
      new SharedQuotaLedger(
        { redis: SHARED_REDIS_URL, leaseMs: 2_000, fallbackShare: 1 },
        createLogger("silent"),
        (c) => crossed.push(c.threshold),
      );
    const [a, b] = [ledger(), ledger()];
    try {
      await eventually(() => a.shared && b.shared, 2_000, "Redis reached");
      const scope = `given-${randomBytes(4).toString("hex")}`;
      const limits = { daily: 1_000, monthly: 0 };
      // a spends 800, told to Redis only up to its last lease
      for (let spent = 0; spent < 800; spent += 10)
        expect((await a.take(scope, limits, 10, 1_000)).allowed).toBe(true);
      await a.close();
      expect(crossed).toEqual([80]);
      // b spends the rest; the 80 % crossing is not announced twice
      while ((await b.take(scope, limits, 10, 1_000)).allowed);
      expect(crossed.filter((t) => t === 80)).toHaveLength(1);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe("the in-process ledger", () => {
  it("announces 80 % and 100 % once each per period, and a refusal as 100 % when no call landed on it", () => {
    const crossed: QuotaCrossing[] = [];
    const ledger = new LocalQuotaLedger((c) => crossed.push(c));
    const limits = { daily: 100, monthly: 0 };
    for (let i = 0; i < 7; i++) expect(ledger.take("k", limits, 10).allowed).toBe(true);
    expect(crossed).toEqual([]);
    expect(ledger.take("k", limits, 10).allowed).toBe(true); // 80
    expect(crossed.map((c) => c.threshold)).toEqual([80]);
    ledger.adjust("k", limits, -10, Date.now()); // the call failed: 70 again
    expect(ledger.take("k", limits, 25).allowed).toBe(true); // 95: 80 again, from below
    expect(ledger.take("k", limits, 10).allowed).toBe(false);
    expect(crossed.map((c) => c.threshold)).toEqual([80, 80, 100]);
    expect(ledger.spent("k").day).toBe(95);
  });
});

describe("a quota resized within its period", () => {
  it("is crossed again at 80 % and 100 % of its new size, though what was spent is past 80 % of it already", () => {
    const crossed: QuotaCrossing[] = [];
    const ledger = new LocalQuotaLedger((c) => crossed.push(c));
    const small = { daily: 0, monthly: 1_000 };
    for (let i = 0; i < 10; i++) ledger.take("k", small, 100);
    expect(crossed.map((c) => `${c.threshold}@${c.limit}`)).toEqual(["80@1000", "100@1000"]);
    crossed.length = 0;
    // raised by a fifth: 1,000 spent is 83 % of it
    const raised = { daily: 0, monthly: 1_200 };
    expect(ledger.take("k", raised, 10).allowed).toBe(true);
    expect(crossed.map((c) => `${c.threshold}@${c.limit}`)).toEqual(["80@1200"]);
    while (ledger.take("k", raised, 10).allowed);
    expect(crossed.map((c) => `${c.threshold}@${c.limit}`)).toEqual(["80@1200", "100@1200", "100@1200"]);
  });

  it("so is one resized before any of its crossings was announced", () => {
    const crossed: QuotaCrossing[] = [];
    const ledger = new LocalQuotaLedger((c) => crossed.push(c));
    ledger.take("k", { daily: 0, monthly: 1_000 }, 500);
    expect(crossed).toEqual([]);
    // lowered to 600: 500 is 83 % of it
    ledger.take("k", { daily: 0, monthly: 600 }, 10);
    expect(crossed.map((c) => `${c.threshold}@${c.limit}`)).toEqual(["80@600"]);
  });
});

describe("a quota hold settled more than once", () => {
  it("holds the last units settled, never a refund twice", () => {
    const ledger = new LocalQuotaLedger();
    const spec = plan({ dailyQuota: 1_000 });
    const terms = { ...spec, name: "metered", hasQuota: true, disables: () => false };
    const principal: Principal = {
      keyId: "FNsettle",
      quotaScope: "FNsettle",
      accountId: "account:1",
      networks: "*",
      archive: false,
      plan: "metered",
      rate: RATE,
      rules: undefined,
    };
    const hold = new QuotaHold(ledger, "FNsettle", principal, terms, 20);
    ledger.take("FNsettle", hold.limits, 20);
    hold.settle(10); // answered from the cache at half its price
    hold.settle(0); // then refused when sent itself
    expect(ledger.spent("FNsettle").day).toBe(0);
    hold.settle(20);
    expect(ledger.spent("FNsettle").day).toBe(20);
  });
});
