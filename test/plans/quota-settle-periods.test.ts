import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "../../src/log.js";
import { LocalQuotaLedger } from "../../src/plans/quota-ledger.js";
import { SharedQuotaLedger } from "../../src/plans/shared-quotas.js";
import { eventually } from "../support/eventually.js";
import { needServices, SHARED_REDIS_URL } from "../support/services.js";

// docs/plans.md: a call the nodes failed costs nothing (its held units are given back), and the periods are
// fixed UTC boundaries. A settle's difference belongs to the day and month the units were held in: a call
// held at 23:59:59.9 and given back after midnight must make no room in the new day, nor, on the 1st, in the
// new month.

const limits = { daily: 100, monthly: 1_000 };

describe("the in-process ledger: a settle after the day turned", () => {
  it("across a month's end: a refund of November's call takes nothing off December's first day", () => {
    let now = Date.UTC(2026, 10, 30, 23, 59, 59, 900); // the last 100 ms of November
    const ledger = new LocalQuotaLedger(
      () => {},
      () => now,
    );
    const heldAt = now;
    expect(ledger.take("k", limits, 75).allowed).toBe(true); // its node still working at midnight
    now = Date.UTC(2026, 11, 1, 0, 0, 0, 200);
    for (let i = 0; i < 10; i++) expect(ledger.take("k", limits, 10).allowed).toBe(true);
    expect(ledger.take("k", limits, 10).allowed).toBe(false);
    ledger.adjust("k", limits, -75, heldAt); // the node failed: November's 75 go back
    expect(ledger.spent("k")).toEqual({ day: 100, month: 100 });
    expect(ledger.take("k", limits, 10).allowed).toBe(false);
    // an extra charge for November: its counters are gone, and December's are not November's
    ledger.adjust("k", limits, 20, heldAt);
    expect(ledger.spent("k")).toEqual({ day: 100, month: 100 });
  });

  it("within a month: the day's count is untouched, the month's takes the difference", () => {
    let now = Date.UTC(2026, 10, 15, 23, 59, 59, 900);
    const ledger = new LocalQuotaLedger(
      () => {},
      () => now,
    );
    const heldAt = now;
    expect(ledger.take("k", limits, 75).allowed).toBe(true);
    now = Date.UTC(2026, 10, 16, 0, 0, 0, 200);
    expect(ledger.take("k", limits, 40).allowed).toBe(true);
    expect(ledger.spent("k")).toEqual({ day: 40, month: 115 });
    ledger.adjust("k", limits, -75, heldAt); // given back: the 15th's units, in November
    expect(ledger.spent("k")).toEqual({ day: 40, month: 40 });
    ledger.adjust("k", limits, 30, heldAt); // cost more than held: still the 15th's, still November's
    expect(ledger.spent("k")).toEqual({ day: 40, month: 70 });
    // a settle of a call held today counts in both
    ledger.adjust("k", limits, -10, now);
    expect(ledger.spent("k")).toEqual({ day: 30, month: 60 });
  });
});

const redis = await needServices("redis");
// db 9: this test's counters apart from other suites'
const REDIS_URL = `${SHARED_REDIS_URL}/9`;

describe.skipIf(redis.skip)("the shared ledger: a settle after the day turned", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("gives November's refund back to November's counters in Redis, not to December's lease", async () => {
    // only Date is faked: ioredis's timers run for real
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Date.UTC(2026, 10, 30, 23, 59, 59, 900));
    const quotas = new SharedQuotaLedger(
      { redis: REDIS_URL, leaseMs: 2_000, fallbackShare: 1 },
      createLogger("silent"),
      () => {},
    );
    const reader = new Redis(REDIS_URL, { keyPrefix: "gateway:quota:" });
    // its first 8 characters are no other test's
    const scope = `refundRo-${randomBytes(4).toString("hex")}`;
    try {
      await eventually(() => quotas.shared, 2_000, "Redis reached");
      const heldAt = Date.now();
      expect((await quotas.take(scope, limits, 75, 10)).allowed).toBe(true);
      vi.setSystemTime(Date.UTC(2026, 11, 1, 0, 0, 0, 200));
      let served = 0;
      while ((await quotas.take(scope, limits, 10, 10)).allowed) served += 10;
      expect(served).toBe(100);
      quotas.adjust(scope, limits, -75, heldAt); // the node failed: November's 75 go back
      expect((await quotas.take(scope, limits, 10, 10)).allowed).toBe(false);
      // November's day and month counters took the refund; December's did not
      await eventually(
        async () => Number(await reader.get(`${scope}:2026-11-30:spent`)) === 0,
        2_000,
        "November's spent counter given back",
      );
      expect(Number(await reader.get(`${scope}:2026-11:spent`))).toBe(0);
      expect(Number(await reader.get(`${scope}:2026-11-30`))).toBe(0);
      expect(Number(await reader.get(`${scope}:2026-12-01`))).toBe(100);
    } finally {
      await quotas.close();
      reader.disconnect();
    }
  });
});
