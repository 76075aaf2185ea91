// The gateway in one process with a routing table loaded at run time: the committed one, or one that
// codegen made from a synthetic registry (BENCH_ENDPOINTS names its endpoints.ts). Both runs go through
// this same file, so the registry's size is the only difference between them.
import { pathToFileURL } from "node:url";
import { DEFAULT_CONFIG, DEFAULT_LIMITS, PLAN_FIELDS } from "../../src/config/defaults.js";
import type { GatewayConfig } from "../../src/config/types.js";
import { StaticKeyStore } from "../../src/keys/static-store.js";
import { createLogger } from "../../src/log.js";
import { createProxyServer } from "../../src/proxy/server.js";
import type { Endpoint } from "../../src/registry/types.js";
import { benchConfig } from "../gateway-config.js";

const env = process.env;
const table = env.BENCH_ENDPOINTS
  ? pathToFileURL(env.BENCH_ENDPOINTS).href
  : new URL("../../generated/endpoints.ts", import.meta.url).href;
const { endpointsByLabel } = (await import(table)) as { endpointsByLabel: ReadonlyMap<string, Endpoint> };

const bench = benchConfig({
  http: env.BENCH_UPSTREAM as string,
  ws: env.BENCH_UPSTREAM_WS as string,
  labels: [env.BENCH_LABEL as string],
});
const config: GatewayConfig = {
  ...DEFAULT_CONFIG,
  ...bench,
  limits: { ...DEFAULT_LIMITS, ws: { ...DEFAULT_LIMITS.ws, ...bench.limits.ws } },
  // the measured label's head call relayed, as `eth`'s is in the bench's deployment: an invented label's
  // would otherwise be answered from the cache, and the two runs would not do the same work
  cache: { ...DEFAULT_CONFIG.cache, labels: { [env.BENCH_LABEL as string]: { headRelative: false } } },
  plans: { ...DEFAULT_CONFIG.plans, bench: { ...PLAN_FIELDS, ...bench.plans.bench } },
  operator: undefined,
};
const gateway = createProxyServer({
  config,
  keys: new StaticKeyStore(config.keys, config.defaultRate),
  endpoints: endpointsByLabel,
  logger: createLogger(config.log.level),
});
gateway.server.listen(Number(env.BENCH_PORT), "127.0.0.1");
