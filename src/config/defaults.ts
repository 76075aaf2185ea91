import type {
  AccountsConfig,
  CacheConfig,
  GatewayConfig,
  HealthConfig,
  Limits,
  PlanSpec,
  TracingConfig,
} from "./types.js";

// The limits trusted proxies use (Node's and undici's own defaults replaced where they are unbounded or
// minutes long; nginx, Envoy and proxyd for the sizes); docs/configuration.md lists each with what it bounds.
export const DEFAULT_LIMITS: Limits = {
  maxHeaderBytes: 16 * 1024,
  maxHeaders: 100,
  maxBodyBytes: 256 * 1024,
  maxBatch: 100,
  maxJsonDepth: 64,
  maxHeldCallsPerCaller: 16,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  connectionsCheckingIntervalMs: 1_000,
  socketIdleTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  shutdownDelayMs: 0,
  drainTimeoutMs: 10_000,
  upstream: {
    connectTimeoutMs: 3_000,
    headersTimeoutMs: 10_000,
    bodyTimeoutMs: 10_000,
    maxResponseBytes: 16 * 1024 * 1024,
    connections: 64,
    deadlineMs: 10_000,
    hedgeMinMs: 250,
    hedgeMaxMs: 2_000,
  },
  publicRate: { perSecond: 10, burst: 20 },
  ws: {
    maxMessageBytes: 1024 * 1024,
    maxBufferedBytes: 4 * 1024 * 1024,
    maxSubscriptions: 100,
    maxInFlight: 100,
    maxConnectionsPerKey: 100,
    maxConnectionsPerIp: 100,
    pingIntervalMs: 30_000,
    idleTimeoutMs: 120_000,
    handshakeTimeoutMs: 10_000,
  },
};

export const DEFAULT_HEALTH: HealthConfig = {
  probeIntervalMs: 2_000,
  probeTimeoutMs: 1_500,
  chainCheckIntervalMs: 60_000,
  failAfter: 3,
  recoverAfter: 2,
  maxLagBlocks: 2,
  maxLagSeconds: 30,
  labels: {},
};

/** The answer cache of every label (docs/cache.md). */
export const DEFAULT_CACHE: CacheConfig = {
  enabled: true,
  maxBytes: 64 * 1024 * 1024,
  maxEntryBytes: 2 * 1024 * 1024,
  headRelative: true,
  headMaxAgeMs: 0,
  labels: {},
};

/** What `sharedLimits` holds besides its Redis URL. */
export const DEFAULT_SHARED_LIMITS = { leaseMs: 100, fallbackShare: 1 } as const;

export const DEFAULT_ACCOUNTS: AccountsConfig = {
  database: ".data/gateway.sqlite",
  listen: { host: "127.0.0.1", port: 8081 },
  mail: { from: "Node gateway <no-reply@localhost>", outbox: ".data/outbox" },
  // A key's call rate meets its plan's compute-unit rate at 10 CU a call (eth_blockNumber): below it the
  // plan's CU rate binds, and the call rate bounds only a flood of the cheapest calls (docs/plans.md)
  freeTest: { days: 7, maxPerEmail: 3, rate: { perSecond: 40, burst: 80 } },
  rotationGraceSeconds: 24 * 3600,
  confirmTokenHours: 24,
  sessionHours: 24,
  signupRatePerIp: { perSecond: 1 / 60, burst: 5 },
  signupRatePerEmail: { perSecond: 1 / 600, burst: 3 },
  followIntervalMs: 500,
  usageFlushIntervalMs: 10_000,
};

/**
 * What a plan an operator adds has unless it says otherwise: no quota, nothing extra, archive nodes for the
 * keys granted them (as before plans said whether they include them: a plan must say `archive: false` to
 * sell one without).
 */
export const PLAN_FIELDS: Omit<PlanSpec, "computeUnitRate"> = {
  dailyQuota: 0,
  monthlyQuota: 0,
  quotaPer: "key",
  dedicatedMethods: false,
  disabledMethods: [],
  archive: "granted",
  maxKeys: 10,
  cachedShare: 1,
  orderable: true,
};

/**
 * The plans that ship (docs/plans.md). A call costs 5 to 300 compute units, most 20
 * (docs/compute-units.md): the free test's rate is about 20 calls a second and its day 50,000 calls; the
 * shared plan's 100 calls a second, 500,000 a day and 10 million a month, GetBlock's and Infura's orders
 * of size (docs/plans.md); a dedicated node has no quota.
 */
export const DEFAULT_PLANS: Readonly<Record<string, PlanSpec>> = {
  "free-test": {
    ...PLAN_FIELDS,
    computeUnitRate: { perSecond: 400, burst: 800 },
    dailyQuota: 1_000_000,
    archive: false,
    maxKeys: 3,
    orderable: false,
  },
  shared: {
    ...PLAN_FIELDS,
    computeUnitRate: { perSecond: 2_000, burst: 4_000 },
    dailyQuota: 10_000_000,
    monthlyQuota: 200_000_000,
  },
  dedicated: {
    ...PLAN_FIELDS,
    computeUnitRate: { perSecond: 20_000, burst: 40_000 },
    dedicatedMethods: true,
    archive: true,
    maxKeys: 50,
  },
};

/** Traces are off until an operator points them at a collector (docs/operations.md, "Traces"). */
export const DEFAULT_TRACING: TracingConfig = {
  enabled: false,
  endpoint: "http://127.0.0.1:4318/v1/traces",
  headers: {},
  sampleRatio: 0.01,
  labels: {},
  followCallerSampling: true,
  serviceName: "node-gateway",
};

export const DEFAULT_CONFIG: GatewayConfig = {
  domain: "localhost",
  listen: { host: "127.0.0.1", port: 8080 },
  publicHosts: {},
  trustedProxies: [],
  support: {
    email: "support@example.com",
    dedicatedNodeUrl: "https://example.com/dashboard/dedicated-nodes",
  },
  upstreams: {},
  health: DEFAULT_HEALTH,
  blockRanges: {},
  cache: DEFAULT_CACHE,
  metrics: { enabled: true },
  tracing: DEFAULT_TRACING,
  operator: { listen: { host: "127.0.0.1", port: 8082 } },
  limits: DEFAULT_LIMITS,
  // the shared plan's 2,000 CU a second at 10 CU a call, as the free test's rate above
  defaultRate: { perSecond: 200, burst: 400 },
  plans: DEFAULT_PLANS,
  keys: [],
  log: { level: "info", access: true },
  localNodes: [],
  demoKey: false,
  workers: 1,
};
