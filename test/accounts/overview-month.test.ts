import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_PLANS, PLAN_FIELDS } from "../../src/config/defaults.js";
import type { Account } from "../../src/control/accounts/types.js";
import { keyHash } from "../../src/keys/digest.js";
import { PostgresUsageSink } from "../../src/keys/postgres-grants.js";
import { type AccountsFixture, startAccounts } from "../accounts/helpers.js";

// The overview's meters (GET /v1/overview, the dashboard) are what the proxies enforce. A key created before
// this month and revoked (or expired) during it left the overview with its month's usage, though its spend
// still counts in a per-account quota (keys/quota-spent.ts sums every key of the account on the plan) and
// GET /v1/usage still listed it: the meter read 100 of 1,000 where the proxies counted 800. A key on a plan
// the deployment removed showed no quota, where the proxies hold it to the shared plan's.

describe("the overview of a month in which an older key was revoked", () => {
  let fx: AccountsFixture;
  beforeAll(async () => {
    fx = await startAccounts({}, undefined, "postgres", {
      domain: "gw.test",
      listen: { host: "127.0.0.1", port: 0 },
      support: DEFAULT_CONFIG.support,
      plans: {
        ...DEFAULT_PLANS,
        team: {
          ...PLAN_FIELDS,
          computeUnitRate: { perSecond: 1000, burst: 1000 },
          monthlyQuota: 1_000,
          quotaPer: "account",
        },
      },
    } as never);
  });
  afterAll(async () => {
    await fx?.close();
  });

  it("meters and error counts keep the revoked key's spend of this month", async () => {
    const store = fx.accounts.store;
    const start = Date.now();
    // the first of next month, at noon UTC
    const d = new Date(start);
    const nextMonth = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1, 12);
    const account = await store.createAccount("owner@example.com", "active", start);
    const old = await store.insertKey(
      {
        accountId: account.id,
        keyHash: keyHash("FNoldKeyOfLastMonth00000000000"),
        prefix: "FNoldKey",
        plan: "team",
        networks: "*",
        archive: false,
      },
      start,
    );
    const kept = await store.insertKey(
      {
        accountId: account.id,
        keyHash: keyHash("FNkeptKeyOfLastMonth0000000000"),
        prefix: "FNkeptKe",
        plan: "team",
        networks: "*",
        archive: false,
      },
      start,
    );
    fx.advance(nextMonth - start);
    const today = new Date(nextMonth).toISOString().slice(0, 10);
    // the proxies' usage flush: the old key spent 700 CU today, the kept one 100
    const sink = new PostgresUsageSink(fx.database);
    await sink.add({
      id: "overview-month:1",
      rows: [
        { key: old.prefix, day: today, label: "eth", calls: 70, errors: 0, units: 700 },
        { key: kept.prefix, day: today, label: "eth", calls: 10, errors: 0, units: 100 },
      ],
      methods: [],
      codes: [],
    });
    await store.revokeKey(old.id, nextMonth + 1000);
    // what a proxy's quota counts for the account's quota on the plan (the month's start after a Redis loss)
    const spent = await sink.spent(`account:${account.id}:team`, today);
    await sink.close();
    const stored = (await store.account(account.id)) as Account;
    const overview = await fx.accounts.service.usage.overview(stored);
    const usage = await fx.accounts.service.usage.ofAccount(stored, today, today);
    const keptView = overview.keys.find((k) => k.prefix === kept.prefix);
    const result = {
      enforcedMonth: spent.month,
      usageApiUnits: usage.total.units,
      overviewKeys: overview.keys.map((k) => k.prefix),
      overviewMeterMonth: keptView?.quota.used.month,
    };
    expect(result).toEqual({
      enforcedMonth: 800,
      usageApiUnits: 800,
      overviewKeys: [old.prefix, kept.prefix],
      overviewMeterMonth: 800,
    });
  });

  it("a key of a plan the deployment removed: the meter shows the shared plan's quotas, which the proxies enforce", async () => {
    const store = fx.accounts.store;
    const account = await store.createAccount("retired@example.com", "active", Date.now());
    const key = await store.insertKey(
      {
        accountId: account.id,
        keyHash: keyHash("FNretiredPlanKey00000000000000"),
        prefix: "FNretire",
        plan: "retired",
        networks: "*",
        archive: false,
      },
      Date.now(),
    );
    const overview = await fx.accounts.service.usage.overview((await store.account(account.id)) as Account);
    const view = overview.keys.find((k) => k.prefix === key.prefix);
    // the proxies serve a key of a removed plan on the shared plan's terms (plans/plan-terms.ts PlanBook),
    // and GET /v1/keys says so (key-view.ts: plans[key.plan] ?? plans.shared)
    expect(view?.quota).toMatchObject({
      daily: DEFAULT_PLANS.shared?.dailyQuota,
      monthly: DEFAULT_PLANS.shared?.monthlyQuota,
    });
  });
});
