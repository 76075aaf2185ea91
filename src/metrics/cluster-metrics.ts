import { AggregatorRegistry, Counter, Gauge, Registry } from "prom-client";
import type { WorkerMetrics } from "../proxy/worker-link.js";
import { registerProcessInfo } from "./process-info.js";
import type { MetricsText } from "./registry.js";

/**
 * A cluster's series, as its primary serves them on GET /metrics: every worker's, summed (counters and
 * histograms; each gauge by its own aggregator), and the primary's own (workers configured and alive,
 * restarts).
 *
 * A counter must never go backwards, though the workers that count come and go: a worker that dies takes
 * its counts with it, and its replacement starts from zero. So the counters and histograms a worker last
 * reported are kept when it dies and added to every later sum. What a worker counted after its last
 * scrape is lost with it. Gauges are its present state, and go with it.
 *
 * A worker that runs but does not answer a scrape in time (stopped, busy) counts with everything it last
 * reported, gauges too: it still holds its connections, and a dependency it last saw down is not up
 * because it is slow to say so (`gateway_dependency_up` is a minimum over the workers). It is counted in
 * `gateway_workers_silent`: the connections the primary hands it wait.
 */
export class ClusterMetrics {
  /** Each worker's last answer, by its cluster id. */
  readonly #lastSeen = new Map<number, WorkerMetrics>();
  /** The counters and histograms of the workers that are gone, summed. */
  #retired: WorkerMetrics = [];
  readonly #own = new Registry();
  readonly #restarts: Counter;
  /** The running workers that gave the last scrape no answer in time. */
  #silent = 0;

  constructor(configured: number, alive: () => number) {
    new Gauge({
      name: "gateway_workers_configured",
      help: "Worker processes the config asks for",
      registers: [this.#own],
      collect() {
        this.set(configured);
      },
    });
    new Gauge({
      name: "gateway_workers_alive",
      help: "Worker processes running",
      registers: [this.#own],
      collect() {
        this.set(alive());
      },
    });
    const cluster = this;
    new Gauge({
      name: "gateway_workers_silent",
      help: "Worker processes running that did not answer this scrape in time (stopped, stuck)",
      registers: [this.#own],
      collect() {
        this.set(cluster.#silent);
      },
    });
    registerProcessInfo(this.#own);
    this.#restarts = new Counter({
      name: "gateway_worker_restarts_total",
      help: "Worker processes started again after one exited",
      registers: [this.#own],
    });
  }

  restarted(): void {
    this.#restarts.inc();
  }

  /** A worker is gone: what it last counted is kept. */
  async gone(worker: number): Promise<void> {
    const last = this.#lastSeen.get(worker);
    this.#lastSeen.delete(worker);
    if (last === undefined) return;
    this.#retired = await AggregatorRegistry.aggregate([this.#retired, cumulative(last)]).getMetricsAsJSON();
  }

  /** The text for one scrape: each running worker's answer, or undefined for one that gave none in time. */
  async scrape(answers: ReadonlyMap<number, WorkerMetrics | undefined>): Promise<MetricsText> {
    const parts: WorkerMetrics[] = [this.#retired];
    this.#silent = 0;
    for (const [worker, answer] of answers) {
      if (answer === undefined) this.#silent += 1;
      else this.#lastSeen.set(worker, answer);
      const last = answer ?? this.#lastSeen.get(worker);
      if (last !== undefined) parts.push(last);
    }
    const workers = AggregatorRegistry.aggregate(parts.filter((part) => part.length > 0));
    const merged = Registry.merge([workers as Registry, this.#own]);
    return { contentType: merged.contentType, text: await merged.metrics() };
  }
}

/** The series that only grow: counters and histograms. */
function cumulative(metrics: WorkerMetrics): WorkerMetrics {
  return metrics.filter((metric) => String(metric.type) === "counter" || String(metric.type) === "histogram");
}
