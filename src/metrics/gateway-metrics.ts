import type { AnswerCache, CacheCounts } from "../cache/answer-cache.js";
import { ERRORS, type ErrorCode } from "../errors/table.js";
import { UPSTREAM_STATES, type UpstreamHealth } from "../upstream/health.js";
import type { Upstream, UpstreamTable } from "../upstream/upstreams.js";
import {
  type CounterCell,
  CounterTable,
  GaugeReading,
  type HistogramEntry,
  HistogramTable,
  type MetricValue,
  type RegistrableMetric,
} from "./tables.js";

/** Whose the outcome of a request is: served, the caller's fault, a node's, the gateway's, or the caller left. */
export type ResultClass = "ok" | "client" | "upstream" | "gateway" | "client_closed";

/** One request or WebSocket message as the metrics count it. Every string comes from the registry or the error table. */
export interface RequestOutcome {
  /** The registry label; `none` when the Host named none. */
  readonly label: string;
  readonly family: string;
  /** The JSON-RPC method (`batch` for a batch, `other` when not an allowed method), or the REST route template. */
  readonly method: string;
  /** The gateway's error code; undefined when it relayed an answer. */
  readonly code: ErrorCode | undefined;
  /** The HTTP status the caller got (0 for a WebSocket message). */
  readonly status: number;
  readonly seconds: number;
  /** The node that answered and its own share of the time, when one did. */
  readonly upstream: string | undefined;
  readonly upstreamSeconds: number | undefined;
  readonly requestBytes: number;
  readonly responseBytes: number;
  /** Whether a key (rather than a client address on a public host) made it. */
  readonly keyed: boolean;
  /** What it cost in compute units (src/plans/compute-units.ts); 0 for a call the gateway refused. */
  readonly computeUnits: number;
  /** What kind of call it was, a bounded set (METHOD_CLASSES): the duration histogram's `class`. */
  readonly methodClass: MethodClass;
}

/**
 * The kinds of call whose times differ by nature: a read, a write, a block range (split or not), a batch,
 * a stream, and `none` for a request that never reached a node (refused, or answered by the gateway).
 */
export type MethodClass = "read" | "write" | "range" | "batch" | "stream" | "none";

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const BYTES = [128, 512, 2048, 8192, 32_768, 131_072, 524_288, 2_097_152, 8_388_608];
const UPSTREAM_CODES = new Set<ErrorCode>([
  "NO_UPSTREAM",
  "UPSTREAM_TIMEOUT",
  "UPSTREAM_BAD_RESPONSE",
  "UPSTREAM_RESPONSE_TOO_LARGE",
  "WRITE_NOT_CONFIRMED",
]);

/** Whose fault an outcome is, from its error code, or for a relayed answer from the node's own status. */
export function resultOf(code: ErrorCode | undefined, status: number): ResultClass {
  if (code === undefined) return status >= 500 || status === 429 ? "upstream" : "ok";
  if (code === "CLIENT_CLOSED") return "client_closed";
  if (UPSTREAM_CODES.has(code)) return "upstream";
  return ERRORS[code].status >= 500 ? "gateway" : "client";
}

/** WebSocket counts a scrape reads, per label. */
export interface WebSocketCounts {
  connections(): ReadonlyMap<string, number>;
  subscriptions(): ReadonlyMap<string, number>;
}

/**
 * The data plane's series (docs/operations.md lists them with their labels). Label values come only from
 * the registry, the error table and the deployment's upstream names: never a key, a path, a host or an IP.
 */
export class GatewayMetrics {
  readonly requests = new CounterTable(
    "gateway_requests_total",
    "Requests and WebSocket messages, by label, family, method or route, result class and error code",
    ["label", "family", "method", "result", "code"],
  );
  readonly duration = new HistogramTable(
    "gateway_request_duration_seconds",
    "A request's whole time in the gateway, to its last byte, by label, family and the kind of call",
    ["label", "family", "class"],
    SECONDS,
  );
  readonly upstreamDuration = new HistogramTable(
    "gateway_upstream_duration_seconds",
    "The answering node's own time, from sending the request to the answer's last byte",
    ["label", "upstream"],
    SECONDS,
  );
  readonly requestBytes = new HistogramTable(
    "gateway_request_body_bytes",
    "Request bodies",
    ["label"],
    BYTES,
  );
  readonly responseBytes = new HistogramTable(
    "gateway_response_bytes",
    "Answers, headers included",
    ["label"],
    BYTES,
  );
  readonly rateLimited = new CounterTable(
    "gateway_rate_limited_total",
    "Requests refused by a rate limit, by label and by whom they count against (a key or a public client)",
    ["label", "client"],
  );
  readonly webSocketFrames = new CounterTable(
    "gateway_websocket_messages_total",
    "WebSocket messages relayed, by label and direction",
    ["label", "direction"],
  );
  readonly webSocketMoves = new CounterTable(
    "gateway_websocket_moves_total",
    "WebSocket connections whose upstream socket was lost: moved to another node, or closed (1014)",
    ["label", "outcome"],
  );

  /**
   * Shared services the proxy works without while they are away (docs/deployment.md): the account store,
   * the shared rate limits. Each is read at scrape time; with workers the primary shows the lowest.
   */
  readonly dependencies = new Map<string, () => boolean>();
  /** The shared limiter's lease counts by outcome, read at scrape time; none without shared limits. */
  leases: (() => Readonly<Record<string, number>>) | undefined;

  /** Every series, for the registry. */
  readonly all: readonly RegistrableMetric[];
  readonly #labels = new Map<string, LabelSeries>();
  /** Compute units served, per label. */
  readonly #computeUnits = new Map<string, number>();

  constructor(upstreams: Pick<UpstreamTable, "groups">, webSockets: WebSocketCounts) {
    this.all = [
      this.requests,
      this.duration,
      this.upstreamDuration,
      this.requestBytes,
      this.responseBytes,
      this.rateLimited,
      this.webSocketFrames,
      this.webSocketMoves,
      new GaugeReading("gateway_websocket_connections", "Open WebSocket connections", "sum", () =>
        perLabel(webSockets.connections()),
      ),
      new GaugeReading(
        "gateway_websocket_subscriptions",
        "Open subscriptions on WebSocket connections",
        "sum",
        () => perLabel(webSockets.subscriptions()),
      ),
      new GaugeReading(
        "gateway_dependency_up",
        "1 while the proxy reaches a shared service (account_store, shared_limits); 0 while it serves without it",
        "min",
        () =>
          [...this.dependencies].map(([dependency, up]) => ({ labels: { dependency }, value: up() ? 1 : 0 })),
      ),
      new GaugeReading(
        "gateway_rate_limit_leases_total",
        "Token leases asked of Redis, by outcome: granted, dry (the key's bucket ran out), failed",
        "sum",
        () =>
          Object.entries(this.leases?.() ?? {}).map(([outcome, value]) => ({ labels: { outcome }, value })),
        "counter",
      ),
      new GaugeReading(
        "gateway_answer_rules_total",
        "What the answer rules did, by label and rule: reads that waited for a node at the served head (and in vain), archive reads and refusals, ranges split or refused, by-hash reads asked again",
        "sum",
        () => answerRules(upstreams),
        "counter",
      ),
      new GaugeReading(
        "gateway_compute_units_total",
        "Compute units of the calls served, by label (docs/compute-units.md): each call's registry cost, times the network's multiplier, times the archive factor when an archive node answered",
        "sum",
        () => [...this.#computeUnits].map(([label, value]) => ({ labels: { label }, value })),
        "counter",
      ),
      new GaugeReading(
        "gateway_cache_requests_total",
        "Calls the answer cache could answer, by label and outcome: hit (from the cache), miss (from a node, then kept if it may be), coalesced (given another call's answer in flight)",
        "sum",
        () => cacheCounts(upstreams, ["hit", "miss", "coalesced"], "outcome"),
        "counter",
      ),
      new GaugeReading(
        "gateway_cache_evictions_total",
        "Answers the cache let go to stay within its byte budget, by label",
        "sum",
        () => cacheCounts(upstreams, ["evicted"]),
        "counter",
      ),
      new GaugeReading(
        "gateway_cache_shared_total",
        "The shared layer of the cache, through Redis: lookups that found an answer (hit) or none (miss), answers stored, and failures (Redis slow or away)",
        "sum",
        () => sharedCounts(upstreams),
        "counter",
      ),
      new GaugeReading("gateway_cache_bytes", "Bytes of answers the cache holds, by label", "sum", () =>
        cacheSizes(upstreams, (cache) => cache.bytes),
      ),
      new GaugeReading("gateway_cache_entries", "Answers the cache holds, by label", "sum", () =>
        cacheSizes(upstreams, (cache) => cache.size),
      ),
      new GaugeReading(
        "gateway_served_head",
        "The highest head each label has served (the prober's readings and the answers')",
        "max",
        () => servedHeads(upstreams),
      ),
      ...upstreamSeries(upstreams),
    ];
  }

  /** A client's WebSocket message, after its checks: counted like a request, with no duration of its own. */
  message(label: string, method: string, code: ErrorCode | undefined, keyed: boolean): void {
    this.requests.add([label, "jsonrpc", method, resultOf(code, 0), code ?? ""]);
    this.webSocketFrames.add([label, "in"]);
    if (code === "RATE_LIMITED") this.rateLimited.add([label, keyed ? "key" : "ip"]);
  }

  request(outcome: RequestOutcome): void {
    const { label, family } = outcome;
    let series = this.#labels.get(label);
    if (series === undefined) {
      series = new LabelSeries(label, this);
      this.#labels.set(label, series);
    }
    const result = resultOf(outcome.code, outcome.status);
    if (result === "ok") series.served(family, outcome.method).value += 1;
    else this.requests.add([label, family, outcome.method, result, outcome.code ?? ""]);
    this.duration.observeIn(series.duration(family, outcome.methodClass), outcome.seconds);
    if (outcome.upstream !== undefined && outcome.upstreamSeconds !== undefined)
      this.upstreamDuration.observeIn(series.upstream(outcome.upstream), outcome.upstreamSeconds);
    if (outcome.requestBytes > 0) this.requestBytes.observeIn(series.requestBytes, outcome.requestBytes);
    if (outcome.responseBytes > 0) this.responseBytes.observeIn(series.responseBytes, outcome.responseBytes);
    if (outcome.code === "RATE_LIMITED") this.rateLimited.add([label, outcome.keyed ? "key" : "ip"]);
    if (outcome.computeUnits > 0)
      this.#computeUnits.set(label, (this.#computeUnits.get(label) ?? 0) + outcome.computeUnits);
  }
}

/**
 * The series one label's requests update, each found in its table once: after that a request reaches them
 * through Map lookups on strings it already holds, building no label array or key. Building them per
 * request (five arrays and five joined keys) cost the one-process bench check its margin (docs/performance.md).
 * Refusals and failures, the rare results, go through the tables' keyed path.
 */
class LabelSeries {
  readonly requestBytes: HistogramEntry;
  readonly responseBytes: HistogramEntry;
  readonly #label: string;
  readonly #metrics: GatewayMetrics;
  /** family → method → its count of `ok` results. */
  readonly #served = new Map<string, Map<string, CounterCell>>();
  /** family → method class → its duration histogram. */
  readonly #duration = new Map<string, Map<string, HistogramEntry>>();
  readonly #upstream = new Map<string, HistogramEntry>();

  constructor(label: string, metrics: GatewayMetrics) {
    this.#label = label;
    this.#metrics = metrics;
    this.requestBytes = metrics.requestBytes.entry([label]);
    this.responseBytes = metrics.responseBytes.entry([label]);
  }

  served(family: string, method: string): CounterCell {
    let methods = this.#served.get(family);
    if (methods === undefined) {
      methods = new Map();
      this.#served.set(family, methods);
    }
    let cell = methods.get(method);
    if (cell === undefined) {
      cell = this.#metrics.requests.cell([this.#label, family, method, "ok", ""]);
      methods.set(method, cell);
    }
    return cell;
  }

  duration(family: string, methodClass: string): HistogramEntry {
    let classes = this.#duration.get(family);
    if (classes === undefined) {
      classes = new Map();
      this.#duration.set(family, classes);
    }
    let entry = classes.get(methodClass);
    if (entry === undefined) {
      entry = this.#metrics.duration.entry([this.#label, family, methodClass]);
      classes.set(methodClass, entry);
    }
    return entry;
  }

  upstream(name: string): HistogramEntry {
    let entry = this.#upstream.get(name);
    if (entry === undefined) {
      entry = this.#metrics.upstreamDuration.entry([this.#label, name]);
      this.#upstream.set(name, entry);
    }
    return entry;
  }
}

function perLabel(counts: ReadonlyMap<string, number>): MetricValue[] {
  return [...counts].map(([label, value]) => ({ labels: { label }, value }));
}

/**
 * Per upstream, from its health record and its counts (upstream/upstream-counts.ts). With node:cluster,
 * each worker judges its upstreams itself; the primary takes the highest state gauge (a state any worker
 * sees), head and lag, adds up calls in flight and the counters, and takes the mean latency and error rate.
 */
function upstreamSeries(table: Pick<UpstreamTable, "groups">): RegistrableMetric[] {
  const reading = (
    name: string,
    help: string,
    aggregator: "sum" | "max" | "average",
    read: (member: Upstream, push: (value: number, extra?: Record<string, string>) => void) => void,
    type: "gauge" | "counter" = "gauge",
  ) =>
    new GaugeReading(
      name,
      help,
      aggregator,
      () => {
        const values: MetricValue[] = [];
        for (const group of table.groups()) {
          for (const member of group.members) {
            const labels = { label: group.label, mount: group.mount, upstream: member.metricName };
            read(member, (value, extra) => values.push({ labels: { ...labels, ...extra }, value }));
          }
        }
        return values;
      },
      type,
    );
  const gauge = (
    name: string,
    help: string,
    aggregator: "sum" | "max" | "average",
    read: (health: UpstreamHealth, push: (value: number, extra?: Record<string, string>) => void) => void,
  ) => reading(name, help, aggregator, (member, push) => read(member.health, push));
  const counter = (
    name: string,
    help: string,
    read: (member: Upstream, push: (value: number, extra?: Record<string, string>) => void) => void,
  ) => reading(name, help, "sum", read, "counter");
  return [
    counter(
      "gateway_upstream_attempts_total",
      "Attempts sent to the upstream, by outcome: answered, failed (an error, a 5xx or 429), dismissed (another node answered first)",
      ({ counts }, push) => {
        push(counts.answered, { outcome: "answered" });
        push(counts.failed, { outcome: "failed" });
        push(counts.dismissed, { outcome: "dismissed" });
      },
    ),
    counter(
      "gateway_upstream_retries_total",
      "Attempts that retried a call another node failed",
      ({ counts }, push) => push(counts.retries),
    ),
    counter(
      "gateway_upstream_hedges_total",
      "Attempts that hedged a read another node was slow on",
      ({ counts }, push) => push(counts.hedges),
    ),
    counter(
      "gateway_upstream_state_changes_total",
      "Times the upstream entered each state",
      ({ counts }, push) => {
        for (const [state, n] of counts.statesEntered) push(n, { state });
      },
    ),
    // "max" over workers: each worker judges the node on its own; a state any of them sees is shown
    gauge("gateway_upstream_state", "1 for the upstream's state, 0 for the others", "max", (health, push) => {
      for (const state of UPSTREAM_STATES) push(health.state === state ? 1 : 0, { state });
    }),
    gauge("gateway_upstream_head", "The head its last good probe read", "max", (health, push) => {
      if (health.head !== undefined) push(health.head);
    }),
    gauge("gateway_upstream_lag_blocks", "Blocks behind the label's best head", "max", (health, push) =>
      push(health.lagBlocks),
    ),
    gauge(
      "gateway_upstream_latency_seconds",
      "Its smoothed time to an answer's headers",
      "average",
      // a node that never answered has no latency: no series, rather than a 0 that looks like the best
      (health, push) => {
        if (health.latencyMs > 0) push(health.latencyMs / 1000);
      },
    ),
    gauge(
      "gateway_upstream_error_ratio",
      "The share of its last 100 calls that failed",
      "average",
      (health, push) => push(health.errorRate),
    ),
    gauge("gateway_upstream_in_flight", "Calls sent to it and not answered yet", "sum", (health, push) =>
      push(health.inFlight),
    ),
  ];
}

/** Each label's answer-rule counts, summed over its mounts' groups: one series per label and rule. */
function answerRules(upstreams: Pick<UpstreamTable, "groups">): MetricValue[] {
  const sums = new Map<string, { label: string; rule: string; value: number }>();
  for (const group of upstreams.groups())
    for (const [rule, value] of group.answers.entries()) {
      const key = `${group.label} ${rule}`;
      const entry = sums.get(key) ?? { label: group.label, rule, value: 0 };
      entry.value += value;
      sums.set(key, entry);
    }
  return [...sums.values()].map(({ label, rule, value }) => ({ labels: { label, rule }, value }));
}

/** Each label's cache counts, summed over its mounts' groups: per label, and per `by` when it is given. */
function cacheCounts(
  upstreams: Pick<UpstreamTable, "groups">,
  names: readonly (keyof CacheCounts)[],
  by?: string,
): MetricValue[] {
  const sums = new Map<string, MetricValue>();
  for (const group of upstreams.groups()) {
    const cache = group.cache;
    if (cache === undefined) continue;
    for (const name of names) {
      const labels: Record<string, string> =
        by === undefined ? { label: group.label } : { label: group.label, [by]: name };
      const key = JSON.stringify(labels);
      const entry = sums.get(key) ?? { labels, value: 0 };
      sums.set(key, { labels, value: entry.value + cache.counts[name] });
    }
  }
  return [...sums.values()];
}

/** The process's shared layer's counts (one layer, whichever groups use it). */
function sharedCounts(upstreams: Pick<UpstreamTable, "groups">): MetricValue[] {
  const layers = new Set(
    upstreams.groups().flatMap((group) => (group.cache?.shared ? [group.cache.shared] : [])),
  );
  const sums = { hit: 0, miss: 0, stored: 0, error: 0 };
  for (const layer of layers)
    for (const name of Object.keys(sums) as (keyof typeof sums)[]) sums[name] += layer.counts[name];
  return layers.size === 0
    ? []
    : Object.entries(sums).map(([outcome, value]) => ({ labels: { outcome }, value }));
}

/** A size of each label's caches, summed over its mounts' groups. */
function cacheSizes(
  upstreams: Pick<UpstreamTable, "groups">,
  size: (cache: AnswerCache) => number,
): MetricValue[] {
  const sums = new Map<string, number>();
  for (const group of upstreams.groups())
    if (group.cache !== undefined) sums.set(group.label, (sums.get(group.label) ?? 0) + size(group.cache));
  return [...sums].map(([label, value]) => ({ labels: { label }, value }));
}

/** Each label's served head, the highest of its mounts' groups. */
function servedHeads(upstreams: Pick<UpstreamTable, "groups">): MetricValue[] {
  const heads = new Map<string, number>();
  for (const group of upstreams.groups())
    if (group.served.height > (heads.get(group.label) ?? -1)) heads.set(group.label, group.served.height);
  return [...heads].map(([label, value]) => ({ labels: { label }, value }));
}
