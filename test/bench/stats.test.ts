import { describe, expect, it } from "vitest";
import { median, pairedRatio, percentile } from "../../bench/stats.js";

describe("bench statistics", () => {
  it("takes nearest-rank percentiles and medians", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(percentile([1, 2, 3, 4], 99)).toBe(4);
    expect(Number.isNaN(median([]))).toBe(true);
  });

  it("pairs ratios by round, so a slow round weighs on both of its targets and not on one", () => {
    // Round 1 ran on a fast machine, round 2 on a slow one: per round, A is about 0.8× B each time.
    const a = [80, 40, 82];
    const b = [100, 50, 100];
    expect(pairedRatio(a, b)).toBeCloseTo(0.8, 5);
    // Where the machine's speed moved, the ratio of the medians mixes rounds and tells another story.
    expect(pairedRatio([100, 50, 10], [200, 40, 12])).toBeCloseTo(10 / 12, 5);
    expect(median([100, 50, 10]) / median([200, 40, 12])).toBeCloseTo(1.25, 5);
  });
});
