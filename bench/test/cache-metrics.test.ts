import { describe, expect, it } from "vitest";
import { seriesValue } from "../cache-metrics.js";

const TEXT = [
  "# HELP gateway_cache_requests_total Calls the answer cache could answer",
  "# TYPE gateway_cache_requests_total counter",
  'gateway_cache_requests_total{label="eth",outcome="hit"} 120',
  'gateway_cache_requests_total{label="eth",outcome="miss"} 3',
  'gateway_cache_requests_total{label="algo",outcome="hit"} 7',
  'gateway_cache_bytes{label="eth"} 268435456',
].join("\n");

describe("the cache's series on the operator API", () => {
  it("reads a sample by its labels, and sums those that match", () => {
    expect(seriesValue(TEXT, "gateway_cache_requests_total", { label: "eth", outcome: "hit" })).toBe(120);
    expect(seriesValue(TEXT, "gateway_cache_requests_total", { label: "eth" })).toBe(123);
    expect(seriesValue(TEXT, "gateway_cache_bytes", { label: "eth" })).toBe(268435456);
  });

  it("reads 0 for a series or a label it does not find", () => {
    expect(seriesValue(TEXT, "gateway_cache_entries", { label: "eth" })).toBe(0);
    expect(seriesValue(TEXT, "gateway_cache_bytes", { label: "sol" })).toBe(0);
  });
});
