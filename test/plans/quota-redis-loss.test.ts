import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import type { QuotaDecision, QuotaSpentSource } from "../../src/plans/quota-ledger.js";
import { SharedQuotaLedger } from "../../src/plans/shared-quotas.js";
import { eventually } from "../support/eventually.js";
import { needOwnServerBinaries, type OwnRedis, startOwnRedis } from "../support/own-servers.js";
import { startTcpForwarder } from "../support/tcp-forwarder.js";

// A quota shared through Redis (docs/plans.md, "Many instances") when Redis loses its counters or goes away
// for a while: what was spent stays spent. Against a Redis of the test's own, which it stops, restarts
// (empty: it keeps nothing on disk) and holds with SIGSTOP.

const silent = createLogger("silent");
/** 100 units a day, 1,000 a month; each call costs 10 and, at 10 units a second and 1 ms a lease, waits for a lease of its own. */
const LIMITS = { daily: 100, monthly: 1_000 };
const COST = 10;
const RATE = 10;

/** The account store's usage counts, as the proxies flushed them: what a scope spent, by what the test says. */
class StoreCounts implements QuotaSpentSource {
  readonly counts = new Map<string, number>();
  readonly asked: string[] = [];
  /** The store cannot be reached. */
  failing = false;
  /** The days it was asked for. */
  readonly days: string[] = [];
  async spent(scope: string, day: string): Promise<{ day: number; month: number }> {
    this.asked.push(scope);
    this.days.push(day);
    if (this.failing) throw new Error("connect ECONNREFUSED");
    const units = this.counts.get(scope) ?? 0;
    return { day: units, month: units };
  }
}

/** How many of `n` calls, each waiting for the one before, the ledger allowed. */
async function allowed(ledger: SharedQuotaLedger, scope: string, n: number): Promise<number> {
  let count = 0;
  for (let i = 0; i < n; i++) {
    const decision: QuotaDecision = await ledger.take(scope, LIMITS, COST, RATE);
    if (decision.allowed) count += 1;
  }
  return count;
}

const binaries = needOwnServerBinaries("redis");

describe.skipIf(binaries.skip)("a shared quota when Redis loses its counters or goes away", () => {
  let own: OwnRedis;
  const ledgers: SharedQuotaLedger[] = [];
  /** A proxy's ledger on `url` (the test's Redis, or a link to it), not waiting for Redis. */
  const ledgerAt = (url: string, source?: QuotaSpentSource) => {
    const made = new SharedQuotaLedger(
      { redis: url, leaseMs: 1, fallbackShare: 1 },
      silent,
      () => {},
      source,
    );
    ledgers.push(made);
    return made;
  };
  const ledger = async (source?: QuotaSpentSource) => {
    const made = ledgerAt(own.url, source);
    expect(await made.ready(3_000)).toBe(true);
    return made;
  };
  beforeAll(async () => {
    own = await startOwnRedis();
  });
  afterEach(async () => {
    await Promise.all(ledgers.splice(0).map((l) => l.close()));
    // a process held by a test that failed halfway runs again
    process.kill(own.pid, "SIGCONT");
  });
  afterAll(async () => {
    await own?.close();
  });

  it("a quota spent before Redis restarted empty stays spent: its counters start from the store's usage counts", async () => {
    const store = new StoreCounts();
    const proxy = await ledger(store);
    expect(await allowed(proxy, "FNspentDay", 12)).toBe(10);
    // the proxies flushed what they counted: the store holds the day's 100 units
    store.counts.set("FNspentDay", 100);
    await own.stop();
    await own.start();
    await eventually(() => proxy.shared, 8_000, "quotas shared again");
    // the new counters grant nothing before the month is started from the store's count
    expect(await allowed(proxy, "FNspentDay", 10)).toBe(0);
    expect(store.asked).toContain("FNspentDay");
    // a proxy started after it, too
    expect(await allowed(await ledger(store), "FNspentDay", 10)).toBe(0);
  }, 20_000);

  it("asks the store once a month per quota, not each day, and again at the next lease when it could not be read", async () => {
    const store = new StoreCounts();
    const proxy = await ledger(store);
    expect(await allowed(proxy, "FNmonthly", 2)).toBe(2);
    expect(store.asked.filter((s) => s === "FNmonthly")).toHaveLength(1);
    // a new day: the day's counter is new, the month's start stands
    const day = new Date().toISOString().slice(0, 10);
    const redis = new Redis(own.url);
    try {
      await redis.del(`gateway:quota:FNmonthly:${day}`);
      expect(await allowed(await ledger(store), "FNmonthly", 1)).toBe(1);
      expect(store.asked.filter((s) => s === "FNmonthly")).toHaveLength(1);
      // a store that cannot be read leaves the month unstarted: the next lease asks again
      store.failing = true;
      await redis.flushdb();
      const again = await ledger(store);
      expect(await allowed(again, "FNmonthly", 1)).toBe(1);
      store.failing = false;
      store.counts.set("FNmonthly", 100);
      // at most what is left of the lease granted while the store could not be read
      expect(await allowed(again, "FNmonthly", 10)).toBeLessThanOrEqual(1);
      expect(store.asked.filter((s) => s === "FNmonthly")).toHaveLength(3);
    } finally {
      redis.disconnect();
    }
  }, 20_000);

  it("counts a quota it had not served alone from the store while Redis is away", async () => {
    const store = new StoreCounts();
    expect(await allowed(await ledger(store), "FNelsewhere", 10)).toBe(10);
    store.counts.set("FNelsewhere", 100);
    const other = await ledger(store);
    await own.stop();
    await eventually(() => !other.shared, 5_000, "counting alone");
    try {
      // its first call waits for the store's count: none passes
      expect(await allowed(other, "FNelsewhere", 5)).toBe(0);
    } finally {
      await own.start();
    }
  }, 20_000);

  it("counts what proxies served alone once Redis lost its counters: from the store, at most twice, never not at all", async () => {
    const store = new StoreCounts();
    const [a, b] = [await ledger(store), await ledger(store)];
    expect(await allowed(a, "FNtwice", 2)).toBe(2);
    await own.stop();
    await eventually(() => !a.shared && !b.shared, 5_000, "both alone");
    // each serves 20 units alone; the usage flushes bring the day's 60 to the store
    expect(await allowed(a, "FNtwice", 2)).toBe(2);
    expect(await allowed(b, "FNtwice", 2)).toBe(2);
    store.counts.set("FNtwice", 60);
    await own.start();
    await eventually(() => a.shared && b.shared, 8_000, "both shared again");
    // the 40 left: a proxy started now gets at most four calls; two when a proxy's return added its 20 to a
    // month the other had started from the store, which held them already (counted twice: never late)
    const later = await allowed(await ledger(store), "FNtwice", 10);
    expect(later).toBeGreaterThanOrEqual(2);
    expect(later).toBeLessThanOrEqual(4);
  }, 30_000);

  it("adds what it served alone to the day's counter when the quota's first call of the day came in a partition", async () => {
    // the month started on another proxy; this one, behind a link that drops every byte, serves the
    // quota's new day alone (its lease never reaches Redis), then reconnects
    expect(await allowed(await ledger(), "FNfirstOfDay", 1)).toBe(1);
    const dayKey = `gateway:quota:FNfirstOfDay:${new Date().toISOString().slice(0, 10)}`;
    const redis = new Redis(own.url);
    const link = await startTcpForwarder(own.port);
    try {
      await redis.del(dayKey);
      const alone = ledgerAt(`redis://127.0.0.1:${link.port}`);
      expect(await alone.ready(3_000)).toBe(true);
      link.blackHole();
      expect(await allowed(alone, "FNfirstOfDay", 10)).toBe(10);
      link.restore();
      await eventually(() => alone.shared, 8_000, "shared again");
      // the day's counter holds the 100 units served alone, and another proxy finds the day spent
      await eventually(async () => Number(await redis.get(dayKey)) >= 100, 3_000, "the day's spend added");
      expect(await allowed(await ledger(), "FNfirstOfDay", 1)).toBe(0);
    } finally {
      redis.disconnect();
      await link.close();
    }
  }, 20_000);

  it("a proxy started while Redis is away counts from the store for today, and its return deletes no counter", async () => {
    const store = new StoreCounts();
    expect(await allowed(await ledger(store), "FNstartedAway", 9)).toBe(9);
    store.counts.set("FNstartedAway", 90);
    const dayKey = `gateway:quota:FNstartedAway:${new Date().toISOString().slice(0, 10)}`;
    const link = await startTcpForwarder(own.port);
    const redis = new Redis(own.url);
    try {
      link.blackHole();
      const away = ledgerAt(`redis://127.0.0.1:${link.port}`, store);
      // its first call waits for the store's count: then the 10 units left, one call
      expect(await allowed(away, "FNstartedAway", 5)).toBe(1);
      expect(store.days.at(-1)).toBe(new Date().toISOString().slice(0, 10));
      link.restore();
      await eventually(() => away.shared, 8_000, "shared once the link is back");
      await eventually(async () => Number(await redis.get(dayKey)) >= 90, 3_000, "the day's counter kept");
    } finally {
      redis.disconnect();
      await link.close();
    }
  }, 20_000);

  it("a Redis that answers but refuses writes (out of memory) keeps a spent quota spent: no flapping back", async () => {
    const proxy = await ledger();
    // half the day spent; then every write refused, leases too
    expect(await allowed(proxy, "FNnoMemory", 5)).toBe(5);
    const redis = new Redis(own.url);
    try {
      await redis.config("SET", "maxmemory-policy", "noeviction");
      await redis.config("SET", "maxmemory", "1");
      // Redis's count of writes it refused for memory: the proxy's leases, and its checks before sharing again
      const refused = async () =>
        Number(/errorstat_OOM:count=(\d+)/.exec(await redis.info("errorstats"))?.[1] ?? 0);
      const before = await refused();
      let served = 0;
      // calls go on until the proxy has asked Redis again three times (a second apart), each a chance to flap
      await eventually(
        async () => {
          served += await allowed(proxy, "FNnoMemory", 1);
          return (await refused()) >= before + 4;
        },
        10_000,
        "the proxy's leases and three write checks refused",
      );
      // the day's other half, counted alone from what Redis last said, and no more
      expect(served).toBeLessThanOrEqual(5);
      expect(proxy.shared).toBe(false);
    } finally {
      await redis.config("SET", "maxmemory", "0");
      redis.disconnect();
    }
    await eventually(() => proxy.shared, 5_000, "shared once Redis takes writes");
  }, 20_000);

  it("counts from the store a quota whose first lease on this proxy found Redis hung", async () => {
    const store = new StoreCounts();
    expect(await allowed(await ledger(store), "FNhungFirst", 10)).toBe(10);
    store.counts.set("FNhungFirst", 100);
    const other = await ledger(store);
    process.kill(own.pid, "SIGSTOP");
    // its first call waits for the lease's deadline and may pass while the store is read; no more
    expect(await allowed(other, "FNhungFirst", 5)).toBeLessThanOrEqual(1);
    process.kill(own.pid, "SIGCONT");
  }, 20_000);

  it("adds what it served alone after Redis was flushed while it was connected", async () => {
    const proxy = await ledger();
    expect(await allowed(proxy, "FNflushed", 2)).toBe(2);
    const redis = new Redis(own.url);
    try {
      await redis.flushdb();
    } finally {
      redis.disconnect();
    }
    // a lease in the new life: 10 units again, the counters started anew (no store here)
    expect(await allowed(proxy, "FNflushed", 2)).toBe(2);
    process.kill(own.pid, "SIGSTOP");
    expect(await allowed(proxy, "FNflushed", 3)).toBe(3);
    process.kill(own.pid, "SIGCONT");
    await eventually(() => proxy.shared, 5_000, "shared again");
    // 20 leased in this life and 30 served alone: 50 left, five calls
    expect(await allowed(await ledger(), "FNflushed", 10)).toBeLessThanOrEqual(5);
  }, 20_000);

  it("while Redis hangs, a proxy counts from what Redis said was spent, and adds what it served meanwhile once Redis answers", async () => {
    const proxy = await ledger();
    expect(await allowed(proxy, "FNhung", 3)).toBe(3);
    process.kill(own.pid, "SIGSTOP");
    // the first call waits for its lease until the command's deadline, then the proxy counts alone: from
    // the 30 units spent, 70 more, and no further
    expect(await allowed(proxy, "FNhung", 10)).toBe(7);
    expect(proxy.shared).toBe(false);
    process.kill(own.pid, "SIGCONT");
    await eventually(() => proxy.shared, 5_000, "quotas shared again once Redis answers");
    // another proxy sees the day spent: the 70 units served alone were added to Redis's counter
    expect(await allowed(await ledger(), "FNhung", 5)).toBe(0);
  }, 20_000);
});
