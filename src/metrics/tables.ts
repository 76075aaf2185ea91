// Counters and histograms kept as plain numbers per set of label values, and read by prom-client's registry
// at scrape time (a metric there is any object with a name and a `get()`). The same series through
// prom-client's own Counter and Histogram cost 2.7 µs more CPU per request in one A/B run, which put the
// one-process bench check out of reach; these cost a Map lookup and an addition (docs/performance.md).

export interface MetricValue {
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
  readonly metricName?: string;
}

/** What prom-client's Registry reads from a metric (its `MetricObjectWithValues`). */
export interface CollectedMetric {
  readonly name: string;
  readonly help: string;
  readonly type: "counter" | "gauge" | "histogram";
  readonly values: readonly MetricValue[];
  /** How node:cluster's primary combines the workers' values (prom-client's aggregators). */
  readonly aggregator: "sum" | "max" | "min" | "average";
}

/** A metric prom-client's Registry can register. */
export interface RegistrableMetric {
  readonly name: string;
  get(): Promise<CollectedMetric>;
  reset(): void;
}

// Label values joined into one Map key: they are registry names and error codes, none with this character.
const SEPARATOR = "\u0001";

function labelsOf(names: readonly string[], values: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  names.forEach((name, i) => {
    labels[name] = values[i] as string;
  });
  return labels;
}

export class CounterTable implements RegistrableMetric {
  readonly name: string;
  readonly #help: string;
  readonly #labelNames: readonly string[];
  readonly #values = new Map<string, CounterCell>();

  constructor(name: string, help: string, labelNames: readonly string[]) {
    this.name = name;
    this.#help = help;
    this.#labelNames = labelNames;
  }

  add(labels: readonly string[], value = 1): void {
    this.cell(labels).value += value;
  }

  /** The count of these label values, to add to directly: a caller that keeps it builds no key again. */
  cell(labels: readonly string[]): CounterCell {
    const key = labels.join(SEPARATOR);
    let cell = this.#values.get(key);
    if (cell === undefined) {
      cell = { labels: [...labels], value: 0 };
      this.#values.set(key, cell);
    }
    return cell;
  }

  /** The count for exactly these label values (0 when never counted). */
  value(labels: readonly string[]): number {
    return this.#values.get(labels.join(SEPARATOR))?.value ?? 0;
  }

  async get(): Promise<CollectedMetric> {
    return {
      name: this.name,
      help: this.#help,
      type: "counter",
      aggregator: "sum",
      values: [...this.#values.values()].map(({ labels, value }) => ({
        labels: labelsOf(this.#labelNames, labels),
        value,
      })),
    };
  }

  reset(): void {
    this.#values.clear();
  }
}

/** One series of a counter. */
export interface CounterCell {
  readonly labels: readonly string[];
  value: number;
}

/** One series of a histogram. */
export interface HistogramEntry {
  readonly labels: readonly string[];
  /** Observations at or below each bound, not yet cumulative. */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

export class HistogramTable implements RegistrableMetric {
  readonly name: string;
  readonly #help: string;
  readonly #labelNames: readonly string[];
  readonly #bounds: readonly number[];
  readonly #entries = new Map<string, HistogramEntry>();

  constructor(name: string, help: string, labelNames: readonly string[], bounds: readonly number[]) {
    this.name = name;
    this.#help = help;
    this.#labelNames = labelNames;
    this.#bounds = bounds;
  }

  observe(labels: readonly string[], value: number): void {
    this.observeIn(this.entry(labels), value);
  }

  /** The series of these label values, to observe into directly: a caller that keeps it builds no key again. */
  entry(labels: readonly string[]): HistogramEntry {
    const key = labels.join(SEPARATOR);
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      entry = { labels: [...labels], counts: new Float64Array(this.#bounds.length + 1), sum: 0, count: 0 };
      this.#entries.set(key, entry);
    }
    return entry;
  }

  observeIn(entry: HistogramEntry, value: number): void {
    let bucket = 0;
    while (bucket < this.#bounds.length && value > (this.#bounds[bucket] as number)) bucket++;
    entry.counts[bucket] = (entry.counts[bucket] as number) + 1;
    entry.sum += value;
    entry.count += 1;
  }

  async get(): Promise<CollectedMetric> {
    const values: MetricValue[] = [];
    for (const entry of this.#entries.values()) {
      const labels = labelsOf(this.#labelNames, entry.labels);
      let cumulative = 0;
      this.#bounds.forEach((bound, i) => {
        cumulative += entry.counts[i] as number;
        values.push({
          metricName: `${this.name}_bucket`,
          labels: { ...labels, le: String(bound) },
          value: cumulative,
        });
      });
      values.push({
        metricName: `${this.name}_bucket`,
        labels: { ...labels, le: "+Inf" },
        value: entry.count,
      });
      values.push({ metricName: `${this.name}_sum`, labels, value: entry.sum });
      values.push({ metricName: `${this.name}_count`, labels, value: entry.count });
    }
    return { name: this.name, help: this.#help, type: "histogram", aggregator: "sum", values };
  }

  reset(): void {
    this.#entries.clear();
  }
}

/**
 * A gauge whose values are read when scraped, from whatever holds them (the upstream table, the sockets);
 * or a counter kept elsewhere, read the same way.
 */
export class GaugeReading implements RegistrableMetric {
  readonly name: string;
  readonly #help: string;
  readonly #aggregator: CollectedMetric["aggregator"];
  readonly #read: () => readonly MetricValue[];
  readonly #type: "gauge" | "counter";

  constructor(
    name: string,
    help: string,
    aggregator: CollectedMetric["aggregator"],
    read: () => readonly MetricValue[],
    type: "gauge" | "counter" = "gauge",
  ) {
    this.name = name;
    this.#help = help;
    this.#aggregator = aggregator;
    this.#read = read;
    this.#type = type;
  }

  async get(): Promise<CollectedMetric> {
    return {
      name: this.name,
      help: this.#help,
      type: this.#type,
      aggregator: this.#aggregator,
      values: this.#read(),
    };
  }

  reset(): void {}
}
