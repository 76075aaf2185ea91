import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { SharedQuotaLedger } from "../../src/plans/shared-quotas.js";
import { eventually } from "../support/eventually.js";
import { needServices, SHARED_REDIS_URL } from "../support/services.js";

// docs/plans.md: "A quota lowered below what a key has spent refuses its next call at once, on every
// proxy, whatever compute units the proxies had leased from Redis under the old number." A proxy whose
// lease was answered before other proxies spent the quota down knows only the counters of its last answer:
// under a lowered quota it went on serving from its lease, past what the key had spent on the others.

const redis = await needServices("redis");
const REDIS = `${SHARED_REDIS_URL}/11`;

describe.skipIf(redis.skip)(
  "a quota lowered by a reload, on a proxy whose lease is older than the others' spending",
  () => {
    it("refuses its next call: the key spent past the new quota on the other proxy", async () => {
      const ledger = () =>
        new SharedQuotaLedger(
          { redis: REDIS, leaseMs: 2_000, fallbackShare: 1 },
          createLogger("silent"),
          () => {},
        );
      const [a, b] = [ledger(), ledger()];
      try {
        await eventually(() => a.shared && b.shared, 2_000, "Redis reached");
        const scope = `lowered-elsewhere-${randomBytes(4).toString("hex")}`;
        const before = { daily: 100_000, monthly: 0 };
        // 100 units a second: leases of 200 units, of which each call spends 10
        expect((await a.take(scope, before, 10, 100)).allowed).toBe(true);
        // b spends 1,000 units meanwhile (a's lease still holds 190)
        for (let i = 0; i < 100; i++) expect((await b.take(scope, before, 10, 100)).allowed).toBe(true);
        // the operator lowers the day's quota to 500 units, below the 1,010 spent: both proxies refuse
        const after = { daily: 500, monthly: 0 };
        expect(await b.take(scope, after, 10, 100)).toMatchObject({ allowed: false, period: "day" });
        expect(await a.take(scope, after, 10, 100)).toMatchObject({
          allowed: false,
          period: "day",
          limit: 500,
        });
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });
  },
);
