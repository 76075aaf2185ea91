import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RateSpec } from "../../src/config/types.js";
import { SharedTokenBuckets } from "../../src/limits/shared-buckets.js";
import { createLogger } from "../../src/log.js";
import { eventually } from "../support/eventually.js";
import { needOwnServerBinaries, type OwnRedis, startOwnRedis } from "../support/own-servers.js";
import { needServices, SHARED_REDIS_URL } from "../support/services.js";

// Stage 5's limiter shared through Redis: leases of a key's tokens, spent locally. These run against the
// machine's Redis (never restarted here) and, for an outage, against a Redis of their own.

const silent = createLogger("silent");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Takes from `limiters` in turn, `perSecond` times a second for `ms`; returns how many were allowed. */
async function drive(
  limiters: readonly SharedTokenBuckets[],
  id: string,
  rate: RateSpec,
  perSecond: number,
  ms: number,
): Promise<{ allowed: number; taken: number }> {
  let allowed = 0;
  let taken = 0;
  const started = performance.now();
  while (performance.now() - started < ms) {
    // In turn: each limiter takes the key's traffic for a tenth of a second.
    const turn = Math.floor((performance.now() - started) / 100) % limiters.length;
    const limiter = limiters[turn] as SharedTokenBuckets;
    if (limiter.take(id, rate, 1).allowed) allowed += 1;
    taken += 1;
    await sleep(1000 / perSecond);
  }
  return { allowed, taken };
}

const redis = await needServices("redis");

describe.skipIf(redis.skip)("shared token buckets on the machine's Redis", () => {
  const config = { redis: SHARED_REDIS_URL, leaseMs: 100, fallbackShare: 1 };
  const limiters: SharedTokenBuckets[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 3; i++) limiters.push(new SharedTokenBuckets(config, silent));
    for (const limiter of limiters) expect(await limiter.ready(3_000)).toBe(true);
  });
  afterAll(async () => {
    await Promise.all(limiters.map((l) => l.close()));
  });

  it("holds a key's rate across three instances taking its traffic in turn (±10% over 3 s)", async () => {
    const rate = { perSecond: 100, burst: 10 };
    const { allowed, taken } = await drive(limiters, `test-${randomUUID()}`, rate, 300, 3_000);
    const expected = rate.burst + rate.perSecond * 3;
    expect(taken).toBeGreaterThan(expected * 1.5); // offered well over the rate
    expect(Math.abs(allowed - expected)).toBeLessThanOrEqual(rate.perSecond * 3 * 0.1);
  }, 10_000);

  it("asks Redis once per lease, not once per request", async () => {
    const [limiter] = limiters as [SharedTokenBuckets];
    const before = { ...limiter.leases };
    const rate = { perSecond: 10_000, burst: 10_000 };
    const id = `test-${randomUUID()}`;
    let allowed = 0;
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 100; i++) if (limiter.take(id, rate, 1).allowed) allowed += 1;
      // the lease each round may have asked for has come back before the next round
      await eventually(() => !limiter.leasePending(id), 2_000, "the lease answered");
    }
    expect(allowed).toBe(2000);
    const asked = limiter.leases.granted + limiter.leases.dry - before.granted - before.dry;
    // a lease is 100 ms of 10 000/s = 1 000 tokens: two or three for 2 000 requests
    expect(asked).toBeGreaterThan(0);
    expect(asked).toBeLessThanOrEqual(4);
  });

  it("lets a request costing more than a lease through at once when the key's bucket holds it, and holds the rate", async () => {
    // 50 calls a second, bursts of 100: a lease is 5 calls, a batch of 20 is four leases
    const rate = { perSecond: 50, burst: 100 };
    const id = `test-${randomUUID()}`;
    const [limiter] = limiters as [SharedTokenBuckets];
    // each take's lease, if it asked for one, has come back before the next take
    const leased = () => eventually(() => !limiter.leasePending(id), 2_000, "the lease asked for");
    expect(limiter.take(id, rate, 20).allowed).toBe(true);
    await leased();
    expect(limiter.take(id, rate, 20).allowed).toBe(true);
    await leased();
    // the bucket's 100 is spent, with what the leases were given: no more than the burst gets through
    let allowed = 40;
    for (let i = 0; i < 10; i++) {
      if (limiter.take(id, rate, 20).allowed) allowed += 20;
      await leased();
    }
    expect(allowed).toBeLessThanOrEqual(100 + 20 + 20);
    expect(allowed).toBeGreaterThanOrEqual(100);
  });

  it("lets a fresh key's burst through at once, as a local bucket would, and holds the rate after it", async () => {
    // a dApp's page load: 20 calls of 75 compute units at once on a plan of 400 a second, bursts of 4 000
    const rate = { perSecond: 400, burst: 4_000 };
    const id = `test-${randomUUID()}`;
    const [a, b] = limiters as [SharedTokenBuckets, SharedTokenBuckets];
    const first = Array.from({ length: 20 }, () => a.take(id, rate, 75).allowed);
    expect(first.filter(Boolean).length).toBe(20);
    await eventually(() => !a.leasePending(id), 2_000, "the credit paid back");
    // another instance sees the key for the first time: its credit is the burst too, but Redis has 2 500 left
    let allowed = 0;
    for (let i = 0; i < 60; i++) {
      if (b.take(id, rate, 75).allowed) allowed += 1;
      await eventually(() => !b.leasePending(id), 2_000, "the lease asked for");
    }
    // 4 000 a burst and what refilled meanwhile, and no more than its own credit's first take over it
    expect(allowed * 75 + 1_500).toBeLessThanOrEqual(4_000 + 400 * 2 + 75);
    expect(allowed).toBeGreaterThanOrEqual(30);
  });

  it("lets a page load's later calls through on credit too, arriving after its first lease landed", async () => {
    // 200 calls a second, bursts of 400: a lease is 20 calls; the burst is 400, whenever its calls come
    const rate = { perSecond: 200, burst: 400 };
    const id = `test-${randomUUID()}`;
    const [limiter] = limiters as [SharedTokenBuckets];
    const early = Array.from({ length: 10 }, () => limiter.take(id, rate, 1).allowed);
    await eventually(() => !limiter.leasePending(id), 2_000, "the first lease landed");
    const late = Array.from({ length: 150 }, () => limiter.take(id, rate, 1).allowed);
    expect([...early, ...late].filter(Boolean).length).toBe(160);
    // and no more than the burst on credit: Redis's bucket, 400 less what the leases took, says when
    const after = Array.from({ length: 400 }, () => limiter.take(id, rate, 1).allowed);
    expect(160 + after.filter(Boolean).length).toBeLessThanOrEqual(400 + 20);
  });

  it("takes a call at once after an idle spell that refilled a bucket Redis had said was dry", async () => {
    const rate = { perSecond: 20, burst: 4 };
    const id = `test-${randomUUID()}`;
    const [limiter] = limiters as [SharedTokenBuckets];
    // spent to dry: the leases come back saying so
    for (let i = 0; i < 12; i++) {
      limiter.take(id, rate, 1);
      await eventually(() => !limiter.leasePending(id), 2_000, "the lease asked for");
    }
    expect(limiter.take(id, rate, 1).allowed).toBe(false);
    // a quarter of a second refills the bucket twice over; the first call after it is not refused
    await sleep(400);
    expect(limiter.take(id, rate, 1).allowed).toBe(true);
  });

  it("refuses with a Retry-After once the key's bucket is dry everywhere", async () => {
    const rate = { perSecond: 1, burst: 5 };
    const id = `test-${randomUUID()}`;
    const decisions = [];
    for (let i = 0; i < 20; i++) {
      decisions.push((limiters[i % 3] as SharedTokenBuckets).take(id, rate, 1));
      await sleep(5);
    }
    const allowed = decisions.filter((d) => d.allowed).length;
    // the burst, and at most one lease of credit per instance (a lease is one token here)
    expect(allowed).toBeGreaterThanOrEqual(5);
    expect(allowed).toBeLessThanOrEqual(5 + 3);
    const refused = decisions.filter((d) => !d.allowed);
    expect(refused.length).toBeGreaterThan(10);
    for (const d of refused) expect(d.retryAfter).toBeGreaterThanOrEqual(1);
  });
});

const binaries = needOwnServerBinaries("redis");

describe.skipIf(binaries.skip)("shared token buckets while Redis is away", () => {
  let own: OwnRedis;
  let limiter: SharedTokenBuckets | undefined;
  beforeAll(async () => {
    own = await startOwnRedis();
  });
  afterEach(async () => {
    await limiter?.close();
    limiter = undefined;
  });
  afterAll(async () => {
    await own?.close();
  });

  it("limits alone at fallbackShare of the rate when Redis cannot be reached at all", async () => {
    limiter = new SharedTokenBuckets(
      { redis: "redis://127.0.0.1:1", leaseMs: 100, fallbackShare: 0.5 },
      silent,
    );
    expect(await limiter.ready(300)).toBe(false);
    const rate = { perSecond: 1, burst: 10 };
    const allowed = Array.from({ length: 10 }, () => limiter?.take("a", rate, 1).allowed).filter(Boolean);
    expect(allowed.length).toBe(5);
  });

  it("decides locally while Redis hangs (connected, not answering), and leases again once it answers", async () => {
    limiter = new SharedTokenBuckets({ redis: own.url, leaseMs: 100, fallbackShare: 1 }, silent);
    expect(await limiter.ready(3_000)).toBe(true);
    const hung = limiter;
    const rate = { perSecond: 100, burst: 100 };
    process.kill(own.pid, "SIGSTOP");
    let allowed = 0;
    let taken = 0;
    try {
      // 100 calls a second for 1.5 s: within the key's rate, so a local decision allows every one
      for (; taken < 150; taken++) {
        if (hung.take("hung", rate, 1).allowed) allowed += 1;
        await sleep(10);
      }
    } finally {
      process.kill(own.pid, "SIGCONT");
    }
    // one lease of credit, then refusals until the lease is 250 ms late; local decisions after that
    expect(allowed).toBeGreaterThanOrEqual(120);
    expect(hung.shared).toBe(true);
    expect(hung.leases.failed).toBeGreaterThan(0);
    const granted = hung.leases.granted;
    await eventually(
      () => {
        hung.take("hung", rate, 1);
        return hung.leases.granted > granted;
      },
      3_000,
      "a lease granted once Redis answers again",
    );
  }, 15_000);

  it("falls back when Redis stops, and shares again when it is back", async () => {
    limiter = new SharedTokenBuckets({ redis: own.url, leaseMs: 100, fallbackShare: 1 }, silent);
    expect(await limiter.ready(3_000)).toBe(true);
    const shared = limiter;
    await own.stop();
    await eventually(() => !shared.shared, 2_000, "limits local once Redis stopped");
    const rate = { perSecond: 1, burst: 3 };
    const local = Array.from({ length: 5 }, () => shared.take("k", rate, 1).allowed);
    expect(local).toEqual([true, true, true, false, false]);
    await own.start();
    await eventually(() => shared.shared, 8_000, "limits shared again once Redis is back");
    // the key's bucket in Redis is new: its burst, then refusals
    const decisions = [];
    for (let i = 0; i < 6; i++) {
      decisions.push(shared.take("k", rate, 1).allowed);
      await sleep(20);
    }
    expect(decisions.filter(Boolean).length).toBeGreaterThanOrEqual(3);
    expect(decisions.filter(Boolean).length).toBeLessThanOrEqual(4);
    expect(shared.leases.granted).toBeGreaterThan(0);
  }, 20_000);
});

describe.skipIf(binaries.skip)("shared token buckets' leases when their table is full", () => {
  let own: OwnRedis;
  let limiter: SharedTokenBuckets | undefined;
  beforeAll(async () => {
    own = await startOwnRedis();
  });
  afterAll(async () => {
    await limiter?.close();
    await own?.close();
  });

  // A lease forgotten is a key's debt forgiven and a burst on credit again: a flood of new ids (public
  // clients' addresses) must not do that for the keys in use, as emptying the whole table did.
  it("keeps the lease of a key in use through a flood of new ids", async () => {
    const active = new SharedTokenBuckets({ redis: own.url, leaseMs: 100, fallbackShare: 1 }, silent, 8);
    limiter = active;
    expect(await active.ready(3_000)).toBe(true);
    const rate = { perSecond: 0.001, burst: 3 };
    const key = `key-${randomUUID()}`;
    let allowed = 0;
    for (let i = 0; i < 10; i++) {
      if (active.take(key, rate, 1).allowed) allowed += 1;
      await eventually(() => !active.leasePending(key), 2_000, "the lease answered");
    }
    expect(allowed).toBe(3);
    for (let i = 0; i < 40; i++) {
      active.take(`flood-${i}`, rate, 1);
      if (i % 3 === 0) expect(active.take(key, rate, 1).allowed, `after ${i}`).toBe(false);
      await sleep(1);
    }
    expect(active.take(key, rate, 1).allowed).toBe(false);
  });
});
