import { describe, expect, it } from "vitest";
import { sharedUnits, UsageDetail } from "../../src/keys/usage-detail.js";

// A key's usage by method (the dashboard's slowest and dearest methods): a batch counts under its calls'
// methods, never as one method named "batch".

const DAY = "2026-11-27";

function rows(detail: UsageDetail) {
  return detail.take(DAY).methods.map(({ method, calls, units, errors, msSum, latency }) => ({
    method,
    calls,
    units,
    errors,
    msSum,
    timed: latency.reduce((sum, n) => sum + n, 0),
  }));
}

describe("usage by method", () => {
  it("times no request the gateway refused before a node (a quota, a rate): its millisecond is not its method's time", () => {
    const detail = new UsageDetail();
    detail.add("FNkey", "eth", 1, 20, 0, { method: "eth_getBalance", code: undefined, ms: 40 });
    detail.add("FNkey", "eth", 1, 0, 1, { method: "eth_getBalance", code: "QUOTA_EXCEEDED", ms: 1 });
    detail.add("FNkey", "eth", 1, 0, 1, { method: "eth_getBalance", code: "RATE_LIMITED", ms: 1 });
    // a node that failed took the caller's time: timed
    detail.add("FNkey", "eth", 1, 0, 1, { method: "eth_getBalance", code: "UPSTREAM_TIMEOUT", ms: 5000 });
    // and a caller that gave up waiting for a node (499): its wait is the method's slowness
    detail.add("FNkey", "eth", 1, 0, 0, { method: "eth_getBalance", code: "CLIENT_CLOSED", ms: 3000 });
    expect(rows(detail)).toEqual([
      { method: "eth_getBalance", calls: 5, units: 20, errors: 3, msSum: 8040, timed: 3 },
    ]);
  });

  it("shares a batch's units by its methods' costs, times each call at the batch's time, and counts refused calls as other, untimed", () => {
    const detail = new UsageDetail();
    const parts = [
      { method: "eth_call", calls: 2, weight: 26 },
      { method: "eth_getBalance", calls: 1, weight: 20 },
    ];
    // 72 units served (26 + 26 + 20), one call refused on its own
    detail.add("FNkey", "eth", 4, 72, 1, {
      method: "batch",
      parts,
      code: undefined,
      ms: 12,
      refusedCodes: ["METHOD_NOT_FOUND"],
    });
    expect(rows(detail)).toEqual([
      { method: "eth_call", calls: 2, units: 52, errors: 0, msSum: 24, timed: 2 },
      { method: "eth_getBalance", calls: 1, units: 20, errors: 0, msSum: 12, timed: 1 },
      // refused before any node: counted, not timed (docs/accounts.md, GET /v1/overview)
      { method: "other", calls: 1, units: 0, errors: 1, msSum: 0, timed: 0 },
    ]);
  });

  it("counts every call of a failed batch as an error of its method, its units whole and adding up", () => {
    const detail = new UsageDetail();
    const parts = [
      { method: "a", calls: 1, weight: 1 },
      { method: "b", calls: 1, weight: 1 },
      { method: "c", calls: 1, weight: 1 },
    ];
    detail.add("FNkey", "eth", 3, 10, 3, {
      method: "batch",
      parts,
      code: "NO_UPSTREAM",
      ms: undefined,
    });
    const seen = rows(detail);
    expect(seen.map((r) => r.errors)).toEqual([1, 1, 1]);
    expect(seen.map((r) => r.units)).toEqual([4, 3, 3]);
    expect(seen.every((r) => r.timed === 0)).toBe(true);
  });
});

describe("a batch's units shared by its methods", () => {
  it("never gives a method a negative share, and the shares add up to the batch's units", () => {
    // a cached batch at a 2.5 % share: 80 units cost 2, over four methods of one weight
    const parts = ["a", "b", "c", "d"].map((method) => ({ method, calls: 1, weight: 20 }));
    const shares = sharedUnits(2, parts);
    expect(shares.every((share) => share >= 0)).toBe(true);
    expect(shares.reduce((sum, share) => sum + share, 0)).toBe(2);
    const uneven = sharedUnits(7, [
      { method: "x", calls: 3, weight: 26 },
      { method: "y", calls: 1, weight: 10 },
    ]);
    expect(uneven).toEqual([6, 1]);
  });
});
