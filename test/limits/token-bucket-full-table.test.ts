import { describe, expect, it } from "vitest";
import type { RateSpec } from "../../src/config/types.js";
import { TokenBuckets } from "../../src/limits/token-bucket.js";

// The table of buckets is bounded. When it fills, a new id must not reset the limits of the ids already in it:
// a bucket is forgettable once it has refilled by its own rate; beyond that those that will have refilled
// soonest go (forgetting them forgives least), never the whole table.
const slow: RateSpec = { perSecond: 1 / 600, burst: 3 };
const fast: RateSpec = { perSecond: 1, burst: 5 };

function clocked(maxEntries: number) {
  let now = 0;
  const buckets = new TokenBuckets(maxEntries, () => now);
  return { buckets, at: (ms: number) => (now = ms) };
}

describe("a full table of token buckets", () => {
  it("keeps a bucket that has not refilled by its own rate, whatever the newcomer's rate", () => {
    const { buckets, at } = clocked(4);
    for (let i = 0; i < 3; i++) expect(buckets.take("victim", slow).allowed).toBe(true);
    expect(buckets.take("victim", slow).allowed).toBe(false);
    at(10_000);
    for (const id of ["a", "b", "c"]) buckets.take(id, fast);
    // 20 s on: the fast buckets have refilled, the victim's (one token per ten minutes) has not
    at(20_000);
    buckets.take("newcomer", fast);
    expect(buckets.take("victim", slow).allowed).toBe(false);
  });

  it("forgets the bucket that refills soonest when none has refilled, and only it", () => {
    const { buckets, at } = clocked(8);
    const hourly = { perSecond: 1 / 3600, burst: 2 };
    for (let i = 0; i < 8; i++) {
      at(i * 1000);
      expect(buckets.take(`id${i}`, hourly).allowed).toBe(true);
    }
    // id0 spends its second token, which puts its refill last: id1's is now the soonest
    at(9000);
    expect(buckets.take("id0", hourly).allowed).toBe(true);
    at(10_000);
    expect(buckets.take("id8", hourly).allowed).toBe(true);
    // a bucket still known has less than two tokens; a forgotten one starts again with two
    for (const id of ["id0", "id2", "id3", "id4", "id5", "id6", "id7", "id8"])
      expect(buckets.take(id, hourly, 2).allowed, id).toBe(false);
    expect(buckets.take("id1", hourly, 2).allowed).toBe(true);
  });

  it("keeps a bucket in use through a flood of new ids", () => {
    const { buckets, at } = clocked(1000);
    at(1);
    expect(buckets.take("victim", slow, 3).allowed).toBe(true);
    for (let i = 0; i < 20_000; i++) {
      at(2 + i);
      // the victim is used now and then, as a real client's bucket is
      if (i % 500 === 0) expect(buckets.take("victim", slow).allowed, `at ${i}`).toBe(false);
      buckets.take(`flood${i}`, slow);
    }
    expect(buckets.take("victim", slow).allowed).toBe(false);
  });

  it("forgets only an eighth of the table when every bucket was used at the same instant", () => {
    const { buckets } = clocked(800);
    for (let i = 0; i < 800; i++) buckets.take(`id${i}`, slow, 3);
    buckets.take("newcomer", slow, 3);
    // the first hundred went (taking from one again would evict others, so they are looked at last)
    for (let i = 100; i < 800; i++) expect(buckets.take(`id${i}`, slow).allowed, `id${i}`).toBe(false);
    expect(buckets.take("newcomer", slow).allowed).toBe(false);
    expect(buckets.take("id0", slow).allowed).toBe(true);
  });
});
