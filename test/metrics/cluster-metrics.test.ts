import { Counter, Gauge, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { ClusterMetrics } from "../../src/metrics/cluster-metrics.js";
import type { WorkerMetrics } from "../../src/proxy/worker-link.js";

/** One worker's answer to a scrape: its requests so far, its open connections and whether Redis is up. */
async function answer(requests: number, connections: number, redisUp: 0 | 1): Promise<WorkerMetrics> {
  const registry = new Registry();
  new Counter({ name: "gateway_requests_total", help: "h", registers: [registry] }).inc(requests);
  new Gauge({
    name: "gateway_websocket_connections",
    help: "h",
    registers: [registry],
    aggregator: "sum",
  }).set(connections);
  new Gauge({ name: "gateway_dependency_up", help: "h", registers: [registry], aggregator: "min" }).set(
    redisUp,
  );
  return (await registry.getMetricsAsJSON()) as WorkerMetrics;
}

function value(text: string, name: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(" ").pop());
}

/** A primary of two workers after one scrape: worker 1 saw Redis up, worker 2 down. */
async function twoWorkersScraped(alive: number): Promise<ClusterMetrics> {
  const metrics = new ClusterMetrics(2, () => alive);
  await metrics.scrape(
    new Map([
      [1, await answer(10, 3, 1)],
      [2, await answer(5, 4, 0)],
    ]),
  );
  return metrics;
}

describe("the primary's scrape of its workers", () => {
  it("counts a worker too slow to answer with all it last reported, gauges included", async () => {
    const metrics = await twoWorkersScraped(2);
    // worker 2 misses this scrape: its requests, its connections and its Redis reading still count
    const text = (
      await metrics.scrape(
        new Map([
          [1, await answer(12, 3, 1)],
          [2, undefined],
        ]),
      )
    ).text;
    expect(value(text, "gateway_requests_total")).toBe(17);
    expect(value(text, "gateway_websocket_connections")).toBe(7);
    expect(value(text, "gateway_dependency_up")).toBe(0);
  });

  it("keeps a worker's counts when it is gone, and drops its gauges", async () => {
    const metrics = await twoWorkersScraped(1);
    await metrics.gone(2);
    const text = (await metrics.scrape(new Map([[1, await answer(12, 3, 1)]]))).text;
    expect(value(text, "gateway_requests_total")).toBe(17);
    expect(value(text, "gateway_websocket_connections")).toBe(3);
    expect(value(text, "gateway_dependency_up")).toBe(1);
  });
});
