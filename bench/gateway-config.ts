// The deployment the benchmark runs the gateway with: the product's defaults (access log on, every
// check on), upstreams pointed at the bench's node, and limits raised only where the load itself would
// trip them (the key's rate, WebSocket connections per key and IP, the idle timer). Upstream probing runs
// with its defaults, as in a deployment.
export const BENCH_KEY = "FNbenchmark0000000000000000000000";
export const BENCH_DOMAIN = "bench.localhost";

export interface BenchDeployment {
  readonly http: string;
  readonly ws: string;
  /** Labels to point at the bench node: JSON-RPC ones get both URLs. */
  readonly labels: readonly string[];
}

export function benchConfig({ http, ws, labels }: BenchDeployment) {
  return {
    domain: BENCH_DOMAIN,
    listen: { host: "127.0.0.1", port: 0 },
    upstreams: Object.fromEntries(labels.map((label) => [label, [{ url: http, ws }]])),
    keys: [{ key: BENCH_KEY, networks: "*" as const, rate: { perSecond: 1e9, burst: 1e9 } }],
    log: { level: "info" as const, access: true },
    // Several gateways run at once: none takes the operator API's fixed port unless a scenario asks.
    operator: null,
    limits: {
      ws: { maxConnectionsPerKey: 1e6, maxConnectionsPerIp: 1e6, idleTimeoutMs: 3_600_000 },
    },
  };
}
