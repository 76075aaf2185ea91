import { callsWaiting } from "../cache/relay-cached.js";
import { ERRORS, type ErrorCode, type ErrorSpec } from "../errors/table.js";
import {
  answerRules,
  cacheCounts,
  cacheSizes,
  perLabel,
  type ServedUpstreams,
  servedHeads,
  sharedCounts,
  upstreamSeries,
} from "./scrape-readings.js";
import {
  type CounterCell,
  CounterTable,
  GaugeReading,
  type HistogramEntry,
  HistogramTable,
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
  /** At a 5xx, the node's own error (registry `nodeErrors`): served, not the node's failure. */
  readonly nodesAnswer?: boolean | undefined;
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
export type MethodClass = "read" | "write" | "range" | "batch" | "stream" | "wait" | "none";

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const BYTES = [128, 512, 2048, 8192, 32_768, 131_072, 524_288, 2_097_152, 8_388_608];

/**
 * Whose fault an outcome is, from its error code, or for a relayed answer from the node's own status; a
 * node's own error at its error status (registry `nodeErrors`, `nodesAnswer`) is served, as at 200.
 */
export function resultOf(code: ErrorCode | undefined, status: number, nodesAnswer = false): ResultClass {
  if (code === undefined) return (status >= 500 || status === 429) && !nodesAnswer ? "upstream" : "ok";
  if (code === "CLIENT_CLOSED") return "client_closed";
  const spec: ErrorSpec = ERRORS[code];
  if (spec.upstream === true) return "upstream";
  return spec.status >= 500 ? "gateway" : "client";
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
  /**
   * Labels that have had a WebSocket connection, under any config: their gauges read 0 once the last
   * closes, across reloads too, rather than vanish (a gauge gone reads as a broken scrape).
   */
  readonly #webSocketLabels = new Set<string>();
  /** Compute units served, per label. */
  readonly #computeUnits = new Map<string, number>();

  constructor(upstreams: ServedUpstreams, webSockets: WebSocketCounts) {
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
        perLabel(this.#withZeroes(webSockets.connections())),
      ),
      new GaugeReading(
        "gateway_websocket_subscriptions",
        "Open subscriptions on WebSocket connections",
        "sum",
        () => perLabel(this.#withZeroes(webSockets.subscriptions())),
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
        "The shared layer of the cache, through Redis: lookups that found an answer (hit) or none (miss), answers stored, answers not stored because a Redis that does not evict them is near its maxmemory (full), and failures (Redis slow or away)",
        "sum",
        () => sharedCounts(upstreams),
        "counter",
      ),
      new GaugeReading("gateway_cache_bytes", "Bytes of answers the cache holds, by label", "sum", () =>
        cacheSizes(upstreams, (cache) => cache.bytes),
      ),
      new GaugeReading(
        "gateway_cache_waiting",
        "Calls waiting on an identical call's answer in flight, by label: the coalescing under way (each is counted coalesced when the answer is shared, or a miss when it has to ask a node itself)",
        "sum",
        () => cacheSizes(upstreams, callsWaiting),
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
  /**
   * A WebSocket upgrade the gateway refused or could not serve (no node took the socket): a request, as an
   * HTTP one refused would be, of the `websocket` family.
   */
  upgradeRefused(label: string, code: ErrorCode, status: number, keyed: boolean): void {
    this.requests.add([label, "websocket", "upgrade", resultOf(code, status), code]);
    if (code === "RATE_LIMITED") this.rateLimited.add([label, keyed ? "key" : "ip"]);
  }

  /** A WebSocket message, counted once it ended (ws/message-intake.ts), with the compute units it cost. */
  message(
    label: string,
    method: string,
    code: ErrorCode | undefined,
    keyed: boolean,
    computeUnits = 0,
  ): void {
    this.requests.add([label, "jsonrpc", method, resultOf(code, 0), code ?? ""]);
    if (computeUnits > 0) this.#computeUnits.set(label, (this.#computeUnits.get(label) ?? 0) + computeUnits);
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
    const result = resultOf(outcome.code, outcome.status, outcome.nodesAnswer);
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

  /** A WebSocket connection opened on `label`: its gauges show it from now on. */
  webSocketOpened(label: string): void {
    this.#webSocketLabels.add(label);
  }

  #withZeroes(counts: ReadonlyMap<string, number>): Map<string, number> {
    const all = new Map(counts);
    for (const label of this.#webSocketLabels) if (!all.has(label)) all.set(label, 0);
    return all;
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
