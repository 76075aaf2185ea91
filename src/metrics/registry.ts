import cluster from "node:cluster";
import { collectDefaultMetrics, Registry } from "prom-client";
import type { GatewayMetrics } from "./gateway-metrics.js";
import { registerProcessInfo } from "./process-info.js";

/** What GET /metrics answers: Prometheus' text format. */
export interface MetricsText {
  readonly contentType: string;
  readonly text: string;
}

/**
 * This process's registry: the gateway's series and Node's own (CPU, memory, event loop lag, GC) with
 * their usual names. In a node:cluster worker it is also what the primary asks for (proxy/cluster.ts).
 */
export function processRegistry(metrics: GatewayMetrics | undefined): Registry {
  const registry = new Registry();
  if (metrics !== undefined) for (const metric of metrics.all) registry.registerMetric(metric as never);
  collectDefaultMetrics({ register: registry });
  // a cluster's primary has these; its workers do not (metrics/process-info.ts)
  if (cluster.isPrimary) registerProcessInfo(registry);
  return registry;
}

export async function scrape(registry: Registry): Promise<MetricsText> {
  return { contentType: registry.contentType, text: await registry.metrics() };
}
