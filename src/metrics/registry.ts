import { AggregatorRegistry, collectDefaultMetrics, Registry } from "prom-client";
import type { GatewayMetrics } from "./gateway-metrics.js";

/** What GET /metrics answers: Prometheus' text format. */
export interface MetricsText {
  readonly contentType: string;
  readonly text: string;
}

/**
 * This process's registry: the gateway's series and Node's own (CPU, memory, event loop lag, GC) with
 * their usual names. In a node:cluster worker it is also what the primary's aggregating registry asks
 * for (prom-client's AggregatorRegistry, over the cluster's IPC channel).
 */
export function processRegistry(metrics: GatewayMetrics | undefined, worker: boolean): Registry {
  const registry = new Registry();
  if (metrics !== undefined) for (const metric of metrics.all) registry.registerMetric(metric as never);
  collectDefaultMetrics({ register: registry });
  if (worker) {
    AggregatorRegistry.setRegistries([registry]);
    // prom-client installs a worker's answer to its primary's request when an AggregatorRegistry is made
    // in that worker (its lib/cluster.js, addListeners): this one is made for that alone.
    new AggregatorRegistry();
  }
  return registry;
}

export async function scrape(registry: Registry): Promise<MetricsText> {
  return { contentType: registry.contentType, text: await registry.metrics() };
}

/** A cluster's primary: every worker's series, counters and histograms summed (docs/operations.md). */
export function clusterScraper(): () => Promise<MetricsText> {
  const aggregator = new AggregatorRegistry();
  return async () => ({ contentType: aggregator.contentType, text: await aggregator.clusterMetrics() });
}
