import type { KeySettings } from "../keys/key-settings.js";
/** An upstream node: a base URL (which may carry a path and basic auth) and headers to add, such as a token. */
export interface UpstreamSpec {
  readonly url: string;
  /** The node's WebSocket URL when it is not the HTTP URL with a ws:// or wss:// scheme. */
  readonly ws?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** How logs and the operator API name it; its origin and base path without credentials by default. */
  readonly name?: string;
  /** `fallback` nodes serve only while no `primary` (the default) is in rotation. */
  readonly tier?: "primary" | "fallback";
  /** Its share of its tier's traffic, all else equal (1 by default). */
  readonly weight?: number;
}

/** How upstreams are probed and judged (docs/upstreams.md). */
export interface HealthConfig {
  /**
   * Time between two probes of one upstream, with ±20% jitter. 0 turns probing off, and with it taking
   * nodes out of rotation: nothing would bring a failing node back.
   */
  readonly probeIntervalMs: number;
  /** A probe's own timeout. */
  readonly probeTimeoutMs: number;
  /**
   * Time between two checks of which chain an upstream is on (registry `chain`), after the one before its
   * first probe; while a node is on another chain, every probe checks.
   */
  readonly chainCheckIntervalMs: number;
  /** Live calls that fail in a row before a node is failing. */
  readonly failAfter: number;
  /** Good probes in a row before a failing or lagging node is back in rotation. */
  readonly recoverAfter: number;
  /** A node is lagging when it is more than this many blocks behind the best head... */
  readonly maxLagBlocks: number;
  /** ...and more than this many seconds of the network's blocks. */
  readonly maxLagSeconds: number;
  /** Per label: any of the fields above. */
  readonly labels: Readonly<Record<string, Partial<Omit<HealthConfig, "labels">>>>;
}

/** A label's upstreams: one list for the whole endpoint, or one list per registry mount path. */
export type LabelUpstreams =
  | readonly (string | UpstreamSpec)[]
  | Readonly<Record<string, readonly (string | UpstreamSpec)[]>>;

export interface RateSpec {
  /** Sustained requests per second. */
  readonly perSecond: number;
  /** Requests that may arrive at once after a quiet period. */
  readonly burst: number;
}

export interface Limits {
  readonly maxHeaderBytes: number;
  readonly maxHeaders: number;
  readonly maxBodyBytes: number;
  readonly maxBatch: number;
  readonly maxJsonDepth: number;
  /** Streams and long polls one caller (a key, or an address without one) may hold at once, per process. */
  readonly maxHeldCallsPerCaller: number;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly connectionsCheckingIntervalMs: number;
  readonly socketIdleTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  /**
   * On a graceful stop, how long the proxy keeps serving while GET /readyz already says not ready, so a
   * load balancer's readiness probe sees it and stops sending before the listener closes.
   */
  readonly shutdownDelayMs: number;
  /** Then, how long requests in flight may take to finish before their connections are cut. */
  readonly drainTimeoutMs: number;
  readonly upstream: {
    readonly connectTimeoutMs: number;
    readonly headersTimeoutMs: number;
    readonly bodyTimeoutMs: number;
    readonly maxResponseBytes: number;
    readonly connections: number;
    /** One call's whole budget, over every attempt, until an answer's headers arrive. */
    readonly deadlineMs: number;
    /** Bounds of a read's wait before it is tried on another node too, derived from the node's latency. */
    readonly hedgeMinMs: number;
    readonly hedgeMaxMs: number;
  };
  readonly publicRate: RateSpec;
  readonly ws: WebSocketLimits;
}

export interface WebSocketLimits {
  /** Larger client messages close the connection with 1009. */
  readonly maxMessageBytes: number;
  /** Bytes queued to a client that does not read; past it the connection closes with 1008. */
  readonly maxBufferedBytes: number;
  readonly maxSubscriptions: number;
  /** Calls sent upstream and not yet answered, per connection. */
  readonly maxInFlight: number;
  readonly maxConnectionsPerKey: number;
  readonly maxConnectionsPerIp: number;
  readonly pingIntervalMs: number;
  /** A connection with no message either way for this long is closed with 1000. */
  readonly idleTimeoutMs: number;
  /** Time to open the upstream socket before the client's upgrade is refused with 504. */
  readonly handshakeTimeoutMs: number;
}

/** One label's answer cache (src/cache/, docs/cache.md). */
export interface CacheSettings {
  readonly enabled: boolean;
  /** The bytes of answers a label's cache holds before the least recently used go. */
  readonly maxBytes: number;
  /** An answer larger than this is never kept. */
  readonly maxEntryBytes: number;
  /** Whether answers read at the head are kept while the head stays (final answers always are). */
  readonly headRelative: boolean;
  /**
   * The longest an answer read at the head is served, however still the head looks: the prober sees a new
   * block only at its next probe. 0: half the network's block time, at most 2 s.
   */
  readonly headMaxAgeMs: number;
}

/**
 * A label's cache settings as its cache applies them (upstream/upstreams.ts `cacheFor`): `headMaxAgeMs`
 * resolved, and whether it came from the network's block time, which the blocks the label is seen to make
 * may shorten further; an age the config gives is the operator's, and is kept.
 */
export interface LabelCacheSettings extends CacheSettings {
  readonly followsBlocks: boolean;
}

export interface CacheConfig extends CacheSettings {
  readonly labels: Readonly<Record<string, Partial<CacheSettings>>>;
}

export interface StaticKey {
  readonly key: string;
  readonly networks: readonly string[] | "*";
  readonly archive?: boolean;
  /** A name in `plans`; "shared" when absent. */
  readonly plan?: string;
  readonly rate?: RateSpec;
  /** What the key is restricted to (docs/plans.md, "Key settings"). */
  readonly settings?: KeySettings;
}

/** What a plan sells (docs/plans.md): its limits in compute units, and what it serves. */
export interface PlanSpec {
  /** Compute units per second, with a burst: the short window, refused with 429 like the call rate. */
  readonly computeUnitRate: RateSpec;
  /** Compute units per UTC day and per calendar month (UTC), refused with 402 once spent; 0: no quota. */
  readonly dailyQuota: number;
  readonly monthlyQuota: number;
  /** Whether the quotas count each key apart, or every key of the account together. */
  readonly quotaPer: "key" | "account";
  /** Whether the registry's dedicated-only methods and interfaces are served. */
  readonly dedicatedMethods: boolean;
  /** More methods refused on this plan, `*` matching any run of characters (`debug_*`). */
  readonly disabledMethods: readonly string[];
  /**
   * Whether the plan includes archive nodes: for every key of it (`true`), for a key granted them (`granted`:
   * a customer's order is, an operator's `keys issue --no-archive` is not), or for none (`false`).
   */
  readonly archive: boolean | "granted";
  /** The keys an account may hold on this plan at once. */
  readonly maxKeys: number;
  /** What an answer from the cache costs, as a share of its compute units (1: the full price). */
  readonly cachedShare: number;
  /** Whether a customer may order keys of this plan from the self-service API. */
  readonly orderable: boolean;
}

export interface GatewayConfig {
  /** Hosts are `<label>.<domain>`. */
  readonly domain: string;
  readonly listen: { readonly host: string; readonly port: number };
  /** Full host name of a public no-key endpoint to the label it serves. */
  readonly publicHosts: Readonly<Record<string, string>>;
  /** Peers whose X-Forwarded-For is believed when limiting public traffic per IP. */
  readonly trustedProxies: readonly string[];
  readonly support: { readonly email: string; readonly dedicatedNodeUrl: string };
  readonly upstreams: Readonly<Record<string, LabelUpstreams>>;
  readonly health: HealthConfig;
  /**
   * Per label and range method, its block-range limits over the registry's (`reads.ranges`): wider than
   * `splitAbove` blocks a call is split into sub-ranges, wider than `refuseAbove` it is refused
   * (docs/upstreams.md, "Ranges"). Per method, since a node's own caps differ by method.
   */
  readonly blockRanges: Readonly<Record<string, Readonly<Record<string, BlockRangeLimits>>>>;
  /** The answer cache (docs/cache.md): its settings, and per label what differs from them. */
  readonly cache: CacheConfig;
  /** The data plane's Prometheus series, served by the operator API's GET /metrics. */
  readonly metrics: { readonly enabled: boolean };
  /** OpenTelemetry traces of the data plane, exported over OTLP/HTTP (docs/operations.md, "Traces"). */
  readonly tracing: TracingConfig;
  /** The operator API (GET /upstreams, cordon): off the public port, on loopback by default. */
  readonly operator: { readonly listen: { readonly host: string; readonly port: number } } | undefined;
  readonly limits: Limits;
  readonly defaultRate: RateSpec;
  /** Plans by name (docs/plans.md); "free-test", "shared" and "dedicated" always exist. */
  readonly plans: Readonly<Record<string, PlanSpec>>;
  /** Keys known without an account store (tests, a local demo). */
  readonly keys: readonly StaticKey[];
  readonly log: { readonly level: "debug" | "info" | "warn" | "error" | "silent"; readonly access: boolean };
  /** Local nodes to start with the gateway (the embedded default starts anvil); each becomes its label's upstream. */
  readonly localNodes: readonly LocalNodeSpec[];
  /** Issue a key at start and print it with a working curl line (the local demo). */
  readonly demoKey: boolean;
  /**
   * Worker processes sharing the listening socket (node:cluster); 1 runs everything in one process.
   * Without `sharedLimits` each worker keeps its own rate-limit buckets, so a key may reach up to
   * `workers` times its rate.
   */
  readonly workers: number;
  /** Rate limits shared by every instance and worker through Redis; without it each process limits alone. */
  readonly sharedLimits?: SharedLimitsConfig;
  /** Accounts, keys and the self-service API; without it only `keys` are known. */
  readonly accounts?: AccountsConfig;
}

/** docs/operations.md, "Traces". */
export interface TracingConfig {
  /** Off by default: no span is made, and the caller's `traceparent` alone is passed on to the node. */
  readonly enabled: boolean;
  /** The collector's OTLP/HTTP traces URL; GATEWAY_TRACING_ENDPOINT overrides it. */
  readonly endpoint: string;
  /** Headers for the collector (an authorization token): sent to it alone, never written to a span. */
  readonly headers: Readonly<Record<string, string>>;
  /** The share of requests traced when the caller sent no sampled `traceparent`. */
  readonly sampleRatio: number;
  /** Per label, the share that differs from `sampleRatio`. */
  readonly labels: Readonly<Record<string, number>>;
  /** Whether a caller's `traceparent` decides: sampled is traced, not sampled is not. */
  readonly followCallerSampling: boolean;
  /** The resource's `service.name`. */
  readonly serviceName: string;
}

export interface BlockRangeLimits {
  readonly splitAbove?: number;
  readonly refuseAbove?: number;
}

/** docs/deployment.md: how tokens are leased, and what happens while Redis is away. */
export interface SharedLimitsConfig {
  /** `redis://[user:password@]host:port[/db]`; GATEWAY_SHARED_LIMITS_REDIS overrides it. */
  readonly redis: string;
  /** How much of a key's rate an instance leases at a time, in milliseconds of it. */
  readonly leaseMs: number;
  /** While Redis cannot be reached, the share of a key's rate each instance grants alone. */
  readonly fallbackShare: number;
  /**
   * How long, at most, an answer that raised a label's head waits for the other instances to hear of it
   * (answers/served-head.ts `SHARE_HOLD_MS`, 50 ms, when left out): a Redis farther away than that needs more.
   */
  readonly headHoldMs?: number;
}

export interface AccountsConfig {
  /**
   * The account store: a SQLite file (the embedded default), or a `postgres://` URL for many instances;
   * created and migrated on start. GATEWAY_ACCOUNTS_DB overrides it.
   */
  readonly database: string;
  /** The self-service API listens here, apart from the node endpoints. */
  readonly listen: { readonly host: string; readonly port: number };
  /** The self-service API's address as users reach it, for links in e-mails. */
  readonly publicUrl?: string;
  readonly mail: {
    readonly from: string;
    /** Without an SMTP server, messages are written as .eml files to this folder. */
    readonly outbox: string;
    readonly smtp?: {
      readonly host: string;
      readonly port: number;
      readonly secure?: boolean;
      readonly user?: string;
      readonly pass?: string;
    };
  };
  readonly freeTest: { readonly days: number; readonly maxPerEmail: number; readonly rate: RateSpec };
  /** How long a rotated key keeps working next to its successor. */
  readonly rotationGraceSeconds: number;
  readonly confirmTokenHours: number;
  readonly sessionHours: number;
  /** Sign-ups, logins and free tests per client IP, and per e-mail address. */
  readonly signupRatePerIp: RateSpec;
  readonly signupRatePerEmail: RateSpec;
  /**
   * How often a proxy asks a SQLite store for key changes made by other processes. A PostgreSQL store
   * announces its changes instead (LISTEN/NOTIFY), and is never polled.
   */
  readonly followIntervalMs: number;
  /** How often a proxy adds its usage counts to the store; a crash loses at most this much. */
  readonly usageFlushIntervalMs: number;
}

export interface LocalNodeSpec {
  readonly label: string;
  /** A command found in node_modules/.bin or on the PATH; `--port <free port>` is appended. */
  readonly command: string;
  readonly args: readonly string[];
  /** Whether the gateway may start without it (the command is missing on this machine). */
  readonly optional?: boolean;
}
