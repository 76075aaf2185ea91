import type { Dispatcher } from "undici";
import { AnswerCache } from "../cache/answer-cache.js";
import type {
  CacheConfig,
  GatewayConfig,
  HealthConfig,
  LabelCacheSettings,
  LabelUpstreams,
  Limits,
  UpstreamSpec,
} from "../config/types.js";
import { type Redact, upstreamName, upstreamRedactor } from "../config/upstream-name.js";
import type { Endpoint } from "../registry/types.js";
import { UpstreamGroup } from "./group.js";
import { type HealthRules, UpstreamHealth, type UpstreamState } from "./health.js";
import { type Dispatch, intercepted, responseCap } from "./interceptors.js";
import { UpstreamCounts } from "./upstream-counts.js";

/** One upstream node of a group: where to send, what to add to every request, and its health. */
export class Upstream {
  /** The operator's name for it, else its origin and base path without credentials: safe to log. */
  readonly name: string;
  /** How the metrics name it: as the logs and the operator API do (config/upstream-name.ts). */
  readonly metricName: string;
  /**
   * Masks what its URL holds of secrets (config/upstream-name.ts) in what the node says: a node's error page
   * may quote the path it was asked on, key and all, and its text goes to the health record and the log.
   */
  readonly redact: Redact;
  /**
   * Its attempts' outcomes, retries, hedges and state changes, for the metrics. A reload hands the record
   * of the config it replaced to the new upstream of the same label, mount and name (carryUpstreamState):
   * calls still out on the old config end after it, and what they count must reach the series scraped.
   */
  counts = new UpstreamCounts();
  readonly dispatcher: Dispatcher;
  /** Its dispatcher's dispatch through the upstream interceptors (interceptors.ts): every call goes here. */
  readonly dispatch: Dispatch;
  /**
   * The same for streams (registry `stream` routes, a node's head monitor) and long polls (`longPolls`):
   * a pool of their own, since each holds its connection for as long as its caller listens or its node
   * waits, and they in the one pool could take every connection and leave the label's reads queued.
   */
  readonly streamDispatch: Dispatch;
  /** Its URL's origin, credentials left out: with `basePath` and `baseQuery`, which node it is. */
  readonly origin: string;
  readonly basePath: string;
  readonly baseQuery: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Whether `headers` has any, so requests without them skip a merge. */
  readonly hasHeaders: boolean;
  /** `headers` as a flat list of names and values, for the node's requests (call-run.ts). */
  readonly flatHeaders: readonly string[];
  /** `headers`' names, lower-cased: a request's header of one of these names gives way to the upstream's. */
  readonly headerNames: ReadonlySet<string>;
  /** Where the node takes WebSocket connections. */
  readonly wsUrl: string;
  /** Fallbacks serve only while no primary is in rotation. */
  readonly tier: "primary" | "fallback";
  /** Its share of traffic against the other members of its tier, all else equal. */
  readonly weight: number;
  readonly health: UpstreamHealth;
  /** Smooth weighted round robin's running weight (`UpstreamGroup.choose`). */
  current = 0;

  constructor(
    fields: Omit<
      Upstream,
      "current" | "effectiveWeight" | "dispatch" | "streamDispatch" | "counts" | "flatHeaders" | "headerNames"
    > & { readonly streamDispatcher: Dispatcher },
  ) {
    this.name = fields.name;
    this.metricName = fields.metricName;
    this.redact = fields.redact;
    this.dispatcher = fields.dispatcher;
    this.dispatch = intercepted(fields.dispatcher, responseCap);
    this.streamDispatch = intercepted(fields.streamDispatcher, responseCap);
    this.origin = fields.origin;
    this.basePath = fields.basePath;
    this.baseQuery = fields.baseQuery;
    this.headers = fields.headers;
    this.hasHeaders = fields.hasHeaders;
    this.flatHeaders = Object.entries(fields.headers).flat();
    this.headerNames = new Set(Object.keys(fields.headers).map((name) => name.toLowerCase()));
    this.wsUrl = fields.wsUrl;
    this.tier = fields.tier;
    this.weight = fields.weight;
    this.health = fields.health;
  }

  /**
   * Its weight as things stand: the configured weight, divided by what makes it worse to send to now
   * (its latency, its calls in flight, its error rate, its lag). A node that starts to hang sees its
   * calls in flight grow and its share fall before it is taken out. Latency counts from 10 ms: below
   * that, between nodes on one network, differences are noise, not a better node.
   */
  effectiveWeight(): number {
    const { health } = this;
    return (
      this.weight /
      (Math.max(10, health.latencyMs) *
        (1 + health.inFlight) *
        (1 + 10 * health.errorRate) *
        (1 + health.lagBlocks))
    );
  }
}

/** The longest a read waits for a node at the served head, whatever the block time: a slow chain's block is minutes. */
const HEAD_WAIT_CAP_MS = 3_000;

/** How upstream connections are made: upstream/policy.ts's poolPerOrigin, or a test's MockAgent. */
export type DispatcherFactory = (origin: string, limits: Limits["upstream"]) => Dispatcher;

/** Told of every state change, for the log (and the operator's view). */
export type StateChange = (
  group: UpstreamGroup,
  upstream: Upstream,
  from: UpstreamState,
  to: UpstreamState,
  reason: string,
) => void;

/** The deployment's label → mount → upstream table, built once at start. */
export class UpstreamTable {
  /** The pools' closing, once begun (close). */
  #closed: Promise<void> | undefined;
  /** Label, then mount path ("*" for the label's endpoint-wide list): no key string is built per request. */
  readonly #groups = new Map<string, Map<string, UpstreamGroup>>();
  readonly #dispatchers = new Map<string, Dispatcher>();
  /** Per origin, the pool of its streams (Upstream.streamDispatch). */
  readonly #streamDispatchers = new Map<string, Dispatcher>();

  constructor(
    config: Pick<GatewayConfig, "upstreams" | "limits" | "health"> & { readonly cache?: CacheConfig },
    endpoints: ReadonlyMap<string, Endpoint>,
    factory: DispatcherFactory,
    onStateChange: StateChange,
  ) {
    for (const [label, upstreams] of Object.entries(config.upstreams)) {
      const health = healthFor(config.health, label);
      const maxLagBlocks = lagThreshold(health, endpoints.get(label));
      // about one block: a read waits that long for a node at the head the label served; with no probes, no
      // node's head is learnt but from the answers the wait holds back, so a read does not wait in vain
      const headWaitMs =
        health.probeIntervalMs > 0
          ? Math.min(HEAD_WAIT_CAP_MS, (endpoints.get(label)?.blockTimeSeconds ?? 0) * 1000)
          : 0;
      for (const [mount, specs] of byMount(upstreams)) {
        if (specs.length === 0) continue;
        const members: Upstream[] = [];
        const group = new UpstreamGroup(label, mount, members, maxLagBlocks, headWaitMs);
        const cache = config.cache === undefined ? undefined : cacheFor(config.cache, endpoints.get(label));
        if (cache !== undefined) group.cache = new AnswerCache(cache);
        for (const spec of specs) {
          const rules = { ...health, takeOut: health.probeIntervalMs > 0 };
          const upstream = this.#upstream(
            spec,
            factory,
            config.limits.upstream,
            rules,
            (from, to, reason) => {
              upstream.counts.entered(to);
              onStateChange(group, upstream, from, to, reason);
              group.stateChanged(from);
            },
          );
          members.push(upstream);
        }
        const mounts = this.#groups.get(label) ?? new Map<string, UpstreamGroup>();
        this.#groups.set(label, mounts.set(mount, group));
      }
    }
  }

  /** The group for a label's mount, falling back to the label's endpoint-wide list. */
  group(label: string, mountPath: string): UpstreamGroup | undefined {
    const mounts = this.#groups.get(label);
    return mounts?.get(mountPath) ?? mounts?.get("*");
  }

  /** Every group, for the prober and the operator's view. */
  groups(): UpstreamGroup[] {
    return [...this.#groups.values()].flatMap((mounts) => [...mounts.values()]);
  }

  /** Closes every pool once: a retired config's may be closed by its retirement and by the stop alike. */
  close(): Promise<void> {
    this.#closed ??= Promise.all(
      [...this.#dispatchers.values(), ...this.#streamDispatchers.values()].map((d) => d.close()),
    ).then(() => undefined);
    return this.#closed;
  }

  #upstream(
    spec: string | UpstreamSpec,
    factory: DispatcherFactory,
    limits: Limits["upstream"],
    rules: HealthRules,
    listener: (from: UpstreamState, to: UpstreamState, reason: string) => void,
  ): Upstream {
    const {
      url,
      headers = {},
      ws,
      name,
      tier = "primary",
      weight = 1,
    } = typeof spec === "string" ? { url: spec } : spec;
    const parsed = new URL(url);
    const extra: Record<string, string> = { ...headers };
    if (parsed.username !== "" || parsed.password !== "") {
      const user = decodeURIComponent(parsed.username);
      const pass = decodeURIComponent(parsed.password);
      extra.authorization = `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;
    }
    const dispatcher = dispatcherFor(this.#dispatchers, parsed.origin, factory, limits);
    const streamDispatcher = dispatcherFor(this.#streamDispatchers, parsed.origin, factory, limits);
    const basePath = parsed.pathname.replace(/\/+$/, "");
    // what a node's text may quote of the secrets it was sent: in its URL and in its configured headers
    const redact = upstreamRedactor(ws === undefined ? [url] : [url, ws], headers);
    return new Upstream({
      name: name ?? upstreamName(spec),
      // one name everywhere: the operator API's, the logs' and the metrics' (bounded by the config)
      metricName: name ?? upstreamName(spec),
      redact,
      dispatcher,
      streamDispatcher,
      origin: parsed.origin,
      basePath,
      baseQuery: parsed.search.slice(1),
      headers: extra,
      hasHeaders: Object.keys(extra).length > 0,
      wsUrl:
        ws ??
        `${parsed.protocol === "https:" ? "wss:" : "ws:"}//${parsed.host}${parsed.pathname}${parsed.search}`,
      tier,
      weight,
      // With a prober, a node gets no call before its first probe says which chain it is on.
      health: new UpstreamHealth(rules, listener, rules.takeOut ? "checking" : "healthy", redact),
    });
  }
}

/**
 * A label's cache settings, or undefined when its cache is off: the label's own over the deployment's,
 * with an answer read at the head kept at most half a block (at most 2 s) unless the config says.
 */
export function cacheFor(cache: CacheConfig, endpoint: Endpoint | undefined): LabelCacheSettings | undefined {
  const { labels, ...shared } = cache;
  const settings = { ...shared, ...(endpoint === undefined ? {} : labels[endpoint.label]) };
  if (!settings.enabled || settings.maxBytes === 0) return undefined;
  if (settings.headMaxAgeMs > 0) return { ...settings, followsBlocks: false };
  const halfBlockMs = ((endpoint?.blockTimeSeconds ?? 0) * 1000) / 2;
  return { ...settings, headMaxAgeMs: Math.min(HEAD_MAX_AGE_CAP_MS, halfBlockMs), followsBlocks: true };
}

/** The longest an answer read at the head is kept by default, on a slow chain. */
const HEAD_MAX_AGE_CAP_MS = 2_000;

/** The health settings of one label: the defaults, with the label's own overrides. */
export function healthFor(health: HealthConfig, label: string): Omit<HealthConfig, "labels"> {
  return { ...health, ...health.labels[label] };
}

/**
 * Blocks a node may be behind before it is lagging: more than `maxLagBlocks` and more than
 * `maxLagSeconds` of the network's blocks (registry `blockTime`), so a fast chain is judged in time and a
 * slow one is not judged lagging for the moment between two nodes seeing a new block.
 */
function lagThreshold(health: Omit<HealthConfig, "labels">, endpoint: Endpoint | undefined): number {
  const blockTime = endpoint?.blockTimeSeconds ?? 0;
  const bySeconds = blockTime > 0 ? Math.ceil(health.maxLagSeconds / blockTime) : 0;
  return Math.max(health.maxLagBlocks, bySeconds);
}

function byMount(upstreams: LabelUpstreams): [string, readonly (string | UpstreamSpec)[]][] {
  if (Array.isArray(upstreams)) return [["*", upstreams]];
  return Object.entries(upstreams as Record<string, readonly (string | UpstreamSpec)[]>);
}

/** The origin's dispatcher in `dispatchers`, made by `factory` the first time: one pool per node, however many lists name it. */
function dispatcherFor(
  dispatchers: Map<string, Dispatcher>,
  origin: string,
  factory: DispatcherFactory,
  limits: Limits["upstream"],
): Dispatcher {
  let dispatcher = dispatchers.get(origin);
  if (dispatcher === undefined) {
    dispatcher = factory(origin, limits);
    dispatchers.set(origin, dispatcher);
  }
  return dispatcher;
}

/** The upstream path: its base path, then the caller's path after the key, then both queries. */
export function upstreamPath(upstream: Upstream, path: string, query: string): string {
  const base = path === "/" && upstream.basePath !== "" ? upstream.basePath : `${upstream.basePath}${path}`;
  if (upstream.baseQuery === "") return `${base}${query}`;
  return query === "" ? `${base}?${upstream.baseQuery}` : `${base}?${upstream.baseQuery}&${query.slice(1)}`;
}
