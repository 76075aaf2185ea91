import type { AddressInfo } from "node:net";
import { type Dispatcher, request } from "undici";
import {
  DEFAULT_CACHE,
  DEFAULT_CONFIG,
  DEFAULT_HEALTH,
  DEFAULT_LIMITS,
  DEFAULT_PLANS,
} from "../../src/config/defaults.js";
import type { GatewayConfig, Limits, StaticKey } from "../../src/config/types.js";
import { StaticKeyStore } from "../../src/keys/static-store.js";
import type { KeyStore } from "../../src/keys/types.js";
import { createLogger } from "../../src/log.js";
import { createProxyServer, type ProxyServer, type ProxyServerOptions } from "../../src/proxy/server.js";
import { startTracing } from "../../src/tracing/start.js";

export const DOMAIN = "gw.test";
/** Test keys: one with every network, one limited to `eth`, one dedicated-plan key. */
export const KEYS = {
  all: "FNtestAllNetworks00000000000000",
  ethOnly: "FNtestEthOnly000000000000000000",
  dedicated: "FNtestDedicated0000000000000000",
  noArchive: "FNtestNoArchive0000000000000000",
} as const;

export const TEST_KEYS: StaticKey[] = [
  { key: KEYS.all, networks: "*", rate: { perSecond: 10_000, burst: 10_000 } },
  { key: KEYS.ethOnly, networks: ["eth"], rate: { perSecond: 10_000, burst: 10_000 } },
  { key: KEYS.dedicated, networks: "*", plan: "dedicated", rate: { perSecond: 10_000, burst: 10_000 } },
  { key: KEYS.noArchive, networks: "*", archive: false, rate: { perSecond: 10_000, burst: 10_000 } },
];

/**
 * The shipped plans without their compute-unit rates and quotas: these suites send thousands of calls a
 * second on their keys, and count what reaches the nodes. The plans' own tests give theirs (test/plans/).
 */
export const TEST_PLANS: GatewayConfig["plans"] = Object.fromEntries(
  Object.entries(DEFAULT_PLANS).map(([name, plan]) => [
    name,
    { ...plan, computeUnitRate: { perSecond: 1e9, burst: 1e9 }, dailyQuota: 0, monthlyQuota: 0 },
  ]),
);

export interface RunningGateway {
  readonly gateway: ProxyServer;
  /** The config it started with, and its keys: what a test reloads it with (gateway.reload). */
  readonly config: GatewayConfig;
  readonly keys: KeyStore;
  readonly origin: string;
  readonly port: number;
  readonly logs: string[];
  /** A request to `<label>.gw.test`, sent to the gateway's loopback address. */
  call(label: string, path: string, init?: CallInit): Promise<CallResult>;
  /**
   * One of its metrics (`Gateway.metrics`, what /metrics shows) now: the sum of the series whose labels
   * include `labels`, 0 when there is none yet.
   */
  metric(name: string, labels?: Readonly<Record<string, string>>): Promise<number>;
  close(): Promise<void>;
}

export interface CallInit {
  readonly method?: Dispatcher.HttpMethod;
  readonly body?: string;
  readonly headers?: Record<string, string>;
  readonly host?: string;
}

export interface CallResult {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  readonly json: unknown;
}

export interface StartOptions extends Partial<Omit<GatewayConfig, "limits">> {
  readonly limits?: Partial<Limits>;
  readonly dispatcherFactory?: ProxyServerOptions["dispatcherFactory"];
  /** Keys from somewhere else than `keys` (the account store's cache). */
  readonly keyStore?: KeyStore;
  /** Served heads shared through Redis (src/answers/shared-heads.ts), as runProxy makes with sharedLimits. */
  readonly heads?: ProxyServerOptions["heads"];
  /** Filters' nodes shared through Redis (src/upstream/shared-handles.ts), as runProxy makes with sharedLimits. */
  readonly handles?: ProxyServerOptions["handles"];
  /** Final answers shared through Redis (src/cache/shared-answers.ts), as runProxy makes with sharedLimits. */
  readonly sharedAnswers?: ProxyServerOptions["sharedAnswers"];
  /** The quota ledger (src/plans/), as runProxy makes one: shared through Redis with sharedLimits. */
  readonly quotas?: ProxyServerOptions["quotas"];
  /** Where keyed calls are counted (keys/usage.ts), as runProxy counts them into an account store. */
  readonly usage?: ProxyServerOptions["usage"];
}

export async function startGateway(options: StartOptions = {}): Promise<RunningGateway> {
  const { dispatcherFactory, limits, keyStore, heads, handles, sharedAnswers, quotas, usage, ...rest } =
    options;
  const config: GatewayConfig = {
    ...DEFAULT_CONFIG,
    domain: DOMAIN,
    keys: TEST_KEYS,
    log: { level: "info", access: true },
    // No probes unless a test asks: the loopback nodes count every request they see.
    health: { ...DEFAULT_HEALTH, probeIntervalMs: 0 },
    // No answer cache unless a test asks: these tests drive their nodes behind the gateway's back, and
    // count what reaches them (the cache's own tests turn it on: test/cache/).
    cache: { ...DEFAULT_CACHE, enabled: false },
    plans: TEST_PLANS,
    ...rest,
    // Closed at once after each suite unless a test asks to drain.
    limits: { ...DEFAULT_LIMITS, drainTimeoutMs: 0, ...limits },
  };
  const logs: string[] = [];
  const logger = createLogger("debug", (line) => logs.push(line));
  const tracing = await startTracing(config.tracing, logger);
  const keys = keyStore ?? new StaticKeyStore(config.keys, config.defaultRate);
  const gateway = createProxyServer({
    config,
    keys,
    logger,
    ...(tracing ? { tracing } : {}),
    ...(dispatcherFactory ? { dispatcherFactory } : {}),
    ...(heads ? { heads } : {}),
    ...(handles ? { handles } : {}),
    ...(sharedAnswers ? { sharedAnswers } : {}),
    ...(quotas ? { quotas } : {}),
    ...(usage ? { usage } : {}),
  });
  await new Promise<void>((resolve) => gateway.server.listen(0, "127.0.0.1", resolve));
  const { port } = gateway.server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    gateway,
    config,
    keys,
    origin,
    port,
    logs,
    async call(label, path, init = {}) {
      const response = await request(`${origin}${path}`, {
        method: init.method ?? (init.body === undefined ? "GET" : "POST"),
        headers: {
          host: init.host ?? `${label}.${DOMAIN}`,
          ...(init.body === undefined ? {} : { "content-type": "application/json" }),
          ...init.headers,
        },
        ...(init.body === undefined ? {} : { body: init.body }),
      });
      const text = await response.body.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: response.statusCode, headers: response.headers, text, json };
    },
    async metric(name, labels = {}) {
      const metric = gateway.metrics?.all.find((m) => m.name === name);
      if (metric === undefined) throw new Error(`the gateway has no metric ${name}`);
      const { values } = await metric.get();
      return values
        .filter((v) => Object.entries(labels).every(([label, value]) => v.labels[label] === value))
        .reduce((sum, v) => sum + v.value, 0);
    },
    close: () => gateway.close(),
  };
}

export function rpcBody(method: string, params: unknown = [], id: unknown = 1): string {
  return JSON.stringify({ jsonrpc: "2.0", id, method, params });
}
