import { describe, expect, it } from "vitest";
import { median, pairedRatio, percentile } from "../stats.js";

describe("bench statistics", () => {
  it("takes nearest-rank percentiles and medians", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(percentile([1, 2, 3, 4], 99)).toBe(4);
    expect(Number.isNaN(median([]))).toBe(true);
  });

  it("pairs ratios by round, so a slow round weighs on both of its targets and not on one", () => {
    // Round 2 ran on a machine half as fast: per round, A is 0.8× B each time.
    expect(pairedRatio([80, 40, 82], [100, 50, 102.5])).toBeCloseTo(0.8, 5);
    // The ratio of the medians would mix rounds from different speeds.
    expect(median([100, 50, 10]) / median([200, 40, 12])).toBeCloseTo(1.25, 5);
    expect(pairedRatio([100, 50, 10], [200, 40, 12])).not.toBeCloseTo(1.25, 1);
  });

  it("weighs forward and reverse rounds alike, however many of each there are", () => {
    // Even rounds (forward) read 0.88, odd ones (reverse) 0.96: the answer lies between, at their geometric mean.
    const b = Array.from({ length: 9 }, () => 100);
    const a = b.map((_, i) => (i % 2 === 0 ? 88 : 96));
    expect(pairedRatio(a, b)).toBeCloseTo(Math.sqrt(0.88 * 0.96), 5);
    // One round only: its own ratio.
    expect(pairedRatio([90], [100])).toBeCloseTo(0.9, 5);
  });
});
