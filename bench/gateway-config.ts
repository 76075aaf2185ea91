// The deployment the benchmark runs the gateway with: the product's defaults (access log on, every
// check on), upstreams pointed at the bench's node, and limits raised only where the load itself would
// trip them (the key's rate, WebSocket connections per key and IP, the idle timer). Upstream probing runs
// with its defaults, as in a deployment. The answer cache is on with its defaults too, but for one thing:
// the labels whose head call the checked workloads send keep no answer read at the head
// (`headRelative: false`), so `eth_blockNumber` is relayed to the node as it was before the cache, and
// the one-process check against the Node floor still measures a relay, with the cache on. What the cache
// answers itself is the cache scenario's (scenarios/cache.ts).
export const BENCH_KEY = "FNbenchmark0000000000000000000000";
export const BENCH_DOMAIN = "bench.localhost";
/** The labels the workloads call: `eth` (JSON-RPC) and `algo` (REST). */
export const BENCH_LABELS: readonly string[] = ["eth", "algo"];
/** The labels whose head call (`eth_blockNumber`) the checked workloads send: relayed, never cached. */
export const HEAD_RELAYED: readonly string[] = ["eth"];

/**
 * The bench key's plan (docs/plans.md): a compute-unit rate and daily and monthly quotas the load never
 * reaches, so that each request pays for counting them, as a sold plan's would.
 */
export const BENCH_PLAN = {
  computeUnitRate: { perSecond: 1e12, burst: 1e12 },
  dailyQuota: 1e15,
  monthlyQuota: 1e16,
};

/** The bench key, on that plan, with settings that each request is checked against and passes. */
export const BENCH_KEY_SPEC = {
  key: BENCH_KEY,
  networks: "*" as const,
  plan: "bench",
  settings: { ips: ["127.0.0.0/8", "::1"], methods: ["eth_*", "net_*", "web3_*", "GET /*", "POST /*"] },
};

/** Where a bench node answers: JSON-RPC and REST over HTTP, subscriptions over WebSocket. */
export interface NodeUrls {
  readonly http: string;
  readonly ws: string;
}

export interface BenchDeployment extends NodeUrls {
  /** Labels to point at the bench node: JSON-RPC ones get both URLs. */
  readonly labels: readonly string[];
  /**
   * Labels whose list names the node twice, as upstreams `a` and `b`: two healthy upstreams, as the
   * gateway is deployed, with the node's work unchanged (one origin, so one connection pool).
   */
  readonly twice?: readonly string[];
}

/** An upstream entry with the name the operator API and the logs show. */
export function namedUpstream(name: string, { http, ws }: NodeUrls) {
  return { url: http, ws, name };
}

export function benchConfig({ http, ws, labels, twice = [] }: BenchDeployment) {
  const node = { http, ws };
  return {
    domain: BENCH_DOMAIN,
    listen: { host: "127.0.0.1", port: 0 },
    upstreams: Object.fromEntries(
      labels.map((label) => [
        label,
        twice.includes(label) ? [namedUpstream("a", node), namedUpstream("b", node)] : [{ url: http, ws }],
      ]),
    ),
    keys: [{ ...BENCH_KEY_SPEC, rate: { perSecond: 1e9, burst: 1e9 } }],
    plans: { bench: BENCH_PLAN },
    cache: {
      labels: Object.fromEntries(
        labels
          .filter((label) => HEAD_RELAYED.includes(label))
          .map((label) => [label, { headRelative: false }]),
      ),
    },
    log: { level: "info" as const, access: true },
    // Several gateways run at once: none takes the operator API's fixed port unless a scenario asks.
    operator: null,
    limits: {
      ws: { maxConnectionsPerKey: 1e6, maxConnectionsPerIp: 1e6, idleTimeoutMs: 3_600_000 },
    },
  };
}
