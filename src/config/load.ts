import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { validateConfig as validate } from "../../generated/config-validator.js";
import { EMBEDDED_CONFIG, embeddedConfigText } from "../embedded.js";
import type { Endpoint } from "../registry/types.js";
import {
  DEFAULT_ACCOUNTS,
  DEFAULT_CONFIG,
  DEFAULT_HEALTH,
  DEFAULT_LIMITS,
  DEFAULT_SHARED_LIMITS,
} from "./defaults.js";
import { ConfigError, ConfigSource } from "./source.js";
import type { AccountsConfig, GatewayConfig, HealthConfig, Limits, UpstreamSpec } from "./types.js";
import { upstreamName } from "./upstream-name.js";

export { ConfigError };

/**
 * The deployment config: the file named by GATEWAY_CONFIG (else the embedded default) over the built-in
 * limits, then the environment, which is where secrets such as upstream credentials belong:
 * GATEWAY_UPSTREAM_<LABEL>=url[,url] (ETH_ARCHIVE for eth-archive), GATEWAY_HOST, GATEWAY_PORT,
 * GATEWAY_DOMAIN, GATEWAY_LOG_LEVEL.
 */
export function loadConfig(
  endpoints: ReadonlyMap<string, Endpoint>,
  env: NodeJS.ProcessEnv = process.env,
): GatewayConfig {
  const source = readSource(env.GATEWAY_CONFIG);
  const raw = source.value();
  if (!validate(raw)) {
    const problems = (validate.errors ?? []).map((e) => {
      const key = (e.params as { additionalProperty?: string }).additionalProperty;
      const where = source.atPointer(e.instancePath, key);
      return `${where}: ${e.instancePath || "config"} ${e.message ?? "is invalid"}${key === undefined ? "" : ` (${key})`}`;
    });
    throw new ConfigError(problems.join("\n"));
  }
  const partial = raw as Partial<GatewayConfig> & { limits?: Partial<Limits> };
  const limits: Limits = {
    ...DEFAULT_LIMITS,
    ...partial.limits,
    upstream: { ...DEFAULT_LIMITS.upstream, ...partial.limits?.upstream },
    ws: { ...DEFAULT_LIMITS.ws, ...partial.limits?.ws },
  };
  const { accounts, health, operator, sharedLimits, ...rest } = partial as Partial<GatewayConfig> & {
    accounts?: Partial<AccountsConfig>;
    health?: Partial<HealthConfig>;
    operator?: { listen?: Partial<{ host: string; port: number }> } | null;
  };
  let config: GatewayConfig = {
    ...DEFAULT_CONFIG,
    ...rest,
    limits,
    health: { ...DEFAULT_HEALTH, ...health, labels: { ...health?.labels } },
    // `operator: null` turns the operator API off
    operator:
      operator === null
        ? undefined
        : {
            listen: {
              ...(DEFAULT_CONFIG.operator?.listen ?? { host: "127.0.0.1", port: 8082 }),
              ...operator?.listen,
            },
          },
    ...(sharedLimits === undefined ? {} : { sharedLimits: { ...DEFAULT_SHARED_LIMITS, ...sharedLimits } }),
    ...(accounts === undefined
      ? {}
      : {
          accounts: {
            ...DEFAULT_ACCOUNTS,
            ...accounts,
            mail: { ...DEFAULT_ACCOUNTS.mail, ...accounts.mail },
            freeTest: { ...DEFAULT_ACCOUNTS.freeTest, ...accounts.freeTest },
          } as AccountsConfig,
        }),
  };
  config = applyEnvironment(config, env);
  checkLabels(config, endpoints, source);
  return config;
}

function applyEnvironment(config: GatewayConfig, env: NodeJS.ProcessEnv): GatewayConfig {
  const upstreams = { ...config.upstreams };
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith("GATEWAY_UPSTREAM_") || value === undefined || value === "") continue;
    const label = name.slice("GATEWAY_UPSTREAM_".length).toLowerCase().replace(/_/g, "-");
    upstreams[label] = value.split(",").map((url) => url.trim());
  }
  const level = env.GATEWAY_LOG_LEVEL as GatewayConfig["log"]["level"] | undefined;
  return {
    ...config,
    ...(config.accounts === undefined ? {} : { accounts: accountsFromEnvironment(config.accounts, env) }),
    upstreams,
    domain: env.GATEWAY_DOMAIN ?? config.domain,
    listen: {
      host: env.GATEWAY_HOST ?? config.listen.host,
      port: env.GATEWAY_PORT === undefined ? config.listen.port : Number(env.GATEWAY_PORT),
    },
    log: level === undefined ? config.log : { ...config.log, level },
    operator:
      config.operator === undefined || !env.GATEWAY_OPERATOR_PORT
        ? config.operator
        : { listen: { ...config.operator.listen, port: Number(env.GATEWAY_OPERATOR_PORT) } },
    workers: workersFrom(env.GATEWAY_WORKERS, config.workers),
    ...(env.GATEWAY_SHARED_LIMITS_REDIS
      ? {
          sharedLimits: {
            ...DEFAULT_SHARED_LIMITS,
            ...config.sharedLimits,
            redis: env.GATEWAY_SHARED_LIMITS_REDIS,
          },
        }
      : {}),
  };
}

/** The deployment file GATEWAY_CONFIG names, or the embedded default; a file that cannot be read says so. */
function readSource(path: string | undefined): ConfigSource {
  if (!path) return new ConfigSource(EMBEDDED_CONFIG, embeddedConfigText());
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ConfigError(`${path}: ${(error as Error).message}`);
  }
  return new ConfigSource(path, text);
}

function checkLabels(
  config: GatewayConfig,
  endpoints: ReadonlyMap<string, Endpoint>,
  source: ConfigSource,
): void {
  const problems: string[] = [];
  const known = (label: string, where: string) => {
    if (!endpoints.has(label))
      problems.push(
        `${source.at(where.split("."), label)}: ${where}: "${label}" is not a label of the registry`,
      );
  };
  for (const label of Object.keys(config.upstreams)) known(label, "upstreams");
  for (const label of Object.keys(config.health.labels)) known(label, "health.labels");
  for (const [label, upstreams] of Object.entries(config.upstreams)) {
    // The operator API and the logs tell upstreams apart by name.
    const lists = Array.isArray(upstreams) ? [upstreams] : Object.values(upstreams);
    for (const list of lists as (string | UpstreamSpec)[][]) {
      const names = list.map(upstreamName);
      const twice = names.find((name, i) => names.indexOf(name) !== i);
      if (twice !== undefined)
        problems.push(
          `${source.at(["upstreams", label])}: upstreams.${label}: two upstreams are named "${twice}"; give each a name`,
        );
    }
  }
  for (const [index, node] of config.localNodes.entries())
    if (!endpoints.has(node.label))
      problems.push(
        `${source.at(["localNodes", index])}: localNodes: "${node.label}" is not a label of the registry`,
      );
  for (const [host, label] of Object.entries(config.publicHosts)) {
    const where = source.at(["publicHosts", host]);
    if (!endpoints.has(label))
      problems.push(`${where}: publicHosts.${host}: "${label}" is not a label of the registry`);
    else if (endpoints.get(label)?.public === false)
      problems.push(`${where}: publicHosts.${host}: "${label}" has no public endpoint in the registry`);
  }
  if (!Number.isInteger(config.listen.port)) problems.push(`${source.file}: GATEWAY_PORT must be an integer`);
  if (!/^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.?$/.test(config.domain))
    problems.push(`${source.at(["domain"])}: domain "${config.domain}" is not a host name`);
  if (problems.length > 0) throw new ConfigError(problems.join("\n"));
}

/** GATEWAY_WORKERS: a number, or "auto" for one per core. */
function workersFrom(value: string | undefined, fallback: number): number {
  if (value === undefined || value === "") return fallback;
  if (value === "auto") return availableParallelism();
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new ConfigError(`GATEWAY_WORKERS must be a positive integer or "auto", not "${value}"`);
  return n;
}

/**
 * GATEWAY_ACCOUNTS_DB, GATEWAY_ACCOUNTS_PORT, GATEWAY_OUTBOX, and GATEWAY_SMTP_URL
 * (smtp://user:pass@host:port, or smtps:// for implicit TLS), where the SMTP password belongs.
 */
function accountsFromEnvironment(accounts: AccountsConfig, env: NodeJS.ProcessEnv): AccountsConfig {
  let mail = env.GATEWAY_OUTBOX ? { ...accounts.mail, outbox: env.GATEWAY_OUTBOX } : accounts.mail;
  if (env.GATEWAY_SMTP_URL) {
    const url = new URL(env.GATEWAY_SMTP_URL);
    const secure = url.protocol === "smtps:";
    mail = {
      ...mail,
      smtp: {
        host: url.hostname,
        port: url.port === "" ? (secure ? 465 : 587) : Number(url.port),
        secure,
        ...(url.username === ""
          ? {}
          : { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) }),
      },
    };
  }
  return {
    ...accounts,
    mail,
    database: env.GATEWAY_ACCOUNTS_DB || accounts.database,
    listen: env.GATEWAY_ACCOUNTS_PORT
      ? { ...accounts.listen, port: Number(env.GATEWAY_ACCOUNTS_PORT) }
      : accounts.listen,
  };
}
