import { readFileSync } from "node:fs";
import { type ConfigProblem, validateConfig as validate } from "../../generated/config-validator.js";
import { EMBEDDED_CONFIG, embeddedConfigText } from "../embedded.js";
import type { GatewayError } from "../errors/table.js";
import { addressBlock } from "../http/address-blocks.js";
import { checkedSettings } from "../keys/key-settings.js";
import type { Endpoint } from "../registry/types.js";
import {
  DEFAULT_ACCOUNTS,
  DEFAULT_CACHE,
  DEFAULT_CONFIG,
  DEFAULT_HEALTH,
  DEFAULT_LIMITS,
  DEFAULT_PLANS,
  DEFAULT_SHARED_LIMITS,
  DEFAULT_TRACING,
  PLAN_FIELDS,
} from "./defaults.js";
import { type ConfigPath, environmentSettings, origin, withSettings } from "./environment.js";
import { relationProblems } from "./relations.js";
import { ConfigError, ConfigSource, pointerPath } from "./source.js";
import type {
  AccountsConfig,
  CacheConfig,
  GatewayConfig,
  HealthConfig,
  Limits,
  PlanSpec,
  TracingConfig,
  UpstreamSpec,
} from "./types.js";
import { upstreamName } from "./upstream-name.js";

export { ConfigError };

/**
 * The deployment config: the file named by GATEWAY_CONFIG (else the embedded default), with the
 * environment's settings written over it (config/environment.ts; where secrets such as upstream
 * credentials belong), checked as one against the schema and the registry, over the built-in defaults.
 * Every problem names where its value came from: `file:line:column`, or the variable.
 */
export function loadConfig(
  endpoints: ReadonlyMap<string, Endpoint>,
  env: NodeJS.ProcessEnv = process.env,
  /**
   * Sections the program never uses, left out before the config is checked: the operator CLI and the
   * control plane do not need Redis, so a host without the proxies' Redis secret can still run them.
   */
  unused: readonly ("sharedLimits" | "tracing")[] = [],
): GatewayConfig {
  const source = readSource(env.GATEWAY_CONFIG);
  const file = source.value();
  const { settings, problems } = environmentSettings(env, file);
  const raw = withSettings(file, settings);
  if (typeof raw === "object" && raw !== null)
    for (const section of unused) delete (raw as Record<string, unknown>)[section];
  const where = origin(source, file, settings);
  if (!validate(raw))
    for (const e of oneErrorPerProblem(validate.errors ?? [])) {
      // a member the schema does not know, or one whose name it refuses: the problem is at its key
      const key = (e.params as { additionalProperty?: string }).additionalProperty ?? e.propertyName;
      const at = where(pointerPath(e.instancePath), key);
      problems.push(
        `${at}: ${e.instancePath || "config"} ${e.message ?? "is invalid"}${detailOf(e)}${key === undefined ? "" : ` (${key})`}`,
      );
    }
  // Every problem at once, the file's and the variables': an operator fixes them in one go. The labels a
  // section names are checked against the registry even when the schema found problems elsewhere.
  if (problems.length > 0)
    throw new ConfigError([...problems, ...unknownLabels(raw, endpoints, where)].join("\n"));
  const config = withDefaults(raw as Partial<GatewayConfig>);
  checkAgainstRegistry(config, endpoints, where);
  return config;
}

/** A valid config's sections over the built-in defaults: limits and health field by field. */
function withDefaults(partial: Partial<GatewayConfig> & { limits?: Partial<Limits> }): GatewayConfig {
  const limits: Limits = {
    ...DEFAULT_LIMITS,
    ...partial.limits,
    upstream: { ...DEFAULT_LIMITS.upstream, ...partial.limits?.upstream },
    ws: { ...DEFAULT_LIMITS.ws, ...partial.limits?.ws },
  };
  const { accounts, cache, health, operator, sharedLimits, listen, log, plans, tracing, support, ...rest } =
    partial as Partial<GatewayConfig> & {
      accounts?: Partial<AccountsConfig>;
      health?: Partial<HealthConfig>;
      cache?: Partial<CacheConfig>;
      tracing?: Partial<TracingConfig>;
      plans?: Readonly<Record<string, Partial<PlanSpec>>>;
      operator?: { listen?: Partial<{ host: string; port: number }> } | null;
      listen?: Partial<GatewayConfig["listen"]>;
      log?: Partial<GatewayConfig["log"]>;
      support?: Partial<GatewayConfig["support"]>;
    };
  return {
    ...DEFAULT_CONFIG,
    ...rest,
    // A variable may give one field of a section the file does not write (GATEWAY_PORT alone).
    listen: { ...DEFAULT_CONFIG.listen, ...listen },
    log: { ...DEFAULT_CONFIG.log, ...log },
    // a deployment that writes its contact e-mail alone keeps the dedicated-node link every page shows
    support: { ...DEFAULT_CONFIG.support, ...support },
    limits,
    health: { ...DEFAULT_HEALTH, ...health, labels: { ...health?.labels } },
    cache: { ...DEFAULT_CACHE, ...cache, labels: { ...cache?.labels } },
    tracing: { ...DEFAULT_TRACING, ...tracing, labels: { ...tracing?.labels } },
    plans: plansOver(plans),
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
}

/**
 * The shipped plans with what the file changes in each, field by field, and the plans it adds: those over
 * PLAN_FIELDS, with the shared plan's rate unless they give one.
 */
function plansOver(given: Readonly<Record<string, Partial<PlanSpec>>> | undefined): Record<string, PlanSpec> {
  const plans: Record<string, PlanSpec> = { ...DEFAULT_PLANS };
  const shared = DEFAULT_PLANS.shared as PlanSpec;
  for (const [name, fields] of Object.entries(given ?? {}))
    plans[name] = {
      ...(DEFAULT_PLANS[name] ?? { ...PLAN_FIELDS, computeUnitRate: shared.computeUnitRate }),
      ...fields,
    };
  return plans;
}

/**
 * What ajv's message leaves out that the operator needs: the values an enum allows, what a header's
 * pattern means (the only members named `headers` are headers the gateway sends, schema.ts).
 */
function detailOf(e: ConfigProblem): string {
  const allowed = e.params.allowedValues;
  if (Array.isArray(allowed)) return `: ${allowed.join(", ")}`;
  if (e.keyword !== "pattern") return "";
  const path = pointerPath(e.instancePath);
  if (e.propertyName !== undefined && path.at(-1) === "headers")
    return ": a header's name is an HTTP token (letters, digits and !#$%&'*+-.^_`|~; no space or colon)";
  if (e.propertyName === undefined && path.at(-2) === "headers")
    return ": a header's value holds no CR, LF, NUL or other control character but tab";
  return "";
}

/**
 * Headers that frame an HTTP/1.1 message, which undici writes itself and refuses from its caller at every
 * request (lib/core/request.js processHeader): as a node's configured header, each would fail every call.
 */
const FRAMING_HEADERS = new Set([
  "connection",
  "content-length",
  "expect",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
]);

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

/** The sections keyed by label, as paths into the config. */
const LABEL_SECTIONS = [
  "upstreams",
  "health.labels",
  "blockRanges",
  "cache.labels",
  "tracing.labels",
] as const;

/**
 * Labels a section names that the registry does not have, read from any config, checked or not: the
 * sections that are not objects are the schema's to report.
 */
function unknownLabels(
  config: unknown,
  endpoints: ReadonlyMap<string, Endpoint>,
  where: (path: ConfigPath, key?: string) => string,
): string[] {
  const problems: string[] = [];
  for (const section of LABEL_SECTIONS) {
    let at: unknown = config;
    for (const member of section.split(".")) at = isObject(at) ? at[member] : undefined;
    if (!isObject(at)) continue;
    for (const label of Object.keys(at))
      if (!endpoints.has(label))
        problems.push(
          `${where(section.split("."), label)}: ${section}: "${label}" is not a label of the registry ${STALE_HINT}`,
        );
  }
  return problems;
}

/** A label added to registry/networks.yaml is a label of the build only once codegen (and a build) ran. */
const STALE_HINT =
  "this build was compiled from (after an edit of registry/networks.yaml, run npm run codegen, and npm run build for dist/)";

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * What the schema cannot say: labels the registry has, upstream URLs that parse, names told apart, proxies
 * that are addresses or CIDR blocks.
 */
function checkAgainstRegistry(
  config: GatewayConfig,
  endpoints: ReadonlyMap<string, Endpoint>,
  where: (path: ConfigPath, key?: string) => string,
): void {
  const problems = unknownLabels(config, endpoints, where);
  for (const [label, upstreams] of Object.entries(config.upstreams)) {
    const lists: [ConfigPath, readonly (string | UpstreamSpec)[]][] = Array.isArray(upstreams)
      ? [[["upstreams", label], upstreams]]
      : Object.entries(upstreams).map(([mount, list]) => [["upstreams", label, mount], list]);
    for (const [path, list] of lists) {
      // The schema checks the scheme only: `http://` alone passes it, and is no URL.
      const broken = list.findIndex((spec) => !isUrl(spec));
      if (broken >= 0) {
        problems.push(`${where([...path, broken])}: ${path.join(".")}[${broken}] is not a URL`);
        continue;
      }
      for (const [index, spec] of list.entries())
        for (const name of Object.keys(typeof spec === "string" ? {} : (spec.headers ?? {})))
          if (FRAMING_HEADERS.has(name.toLowerCase()))
            problems.push(
              `${where([...path, index, "headers"], name)}: ${path.join(".")}[${index}].headers.${name}: the gateway frames its own requests to the node (${[...FRAMING_HEADERS].join(", ")} are undici's, and refused at every request)`,
            );
      // The operator API and the logs tell upstreams apart by name.
      const names = list.map(upstreamName);
      const twice = names.find((name, i) => names.indexOf(name) !== i);
      if (twice !== undefined)
        problems.push(
          `${where(path)}: ${path.join(".")}: two upstreams are named "${twice}"; give each a name`,
        );
    }
  }
  for (const [index, key] of config.keys.entries()) {
    if (key.plan !== undefined && config.plans[key.plan] === undefined)
      problems.push(
        `${where(["keys", index, "plan"])}: keys[${index}].plan: "${key.plan}" is not a plan in plans`,
      );
    if (key.settings === undefined) continue;
    try {
      checkedSettings(key.settings);
    } catch (error) {
      const { field, reason } = ((error as GatewayError).detail ?? {}) as { field?: string; reason?: string };
      problems.push(`${where(["keys", index, "settings"])}: keys[${index}].settings.${field}: ${reason}`);
    }
  }
  for (const [index, node] of config.localNodes.entries())
    if (!endpoints.has(node.label))
      problems.push(
        `${where(["localNodes", index])}: localNodes: "${node.label}" is not a label of the registry`,
      );
  for (const [host, label] of Object.entries(config.publicHosts)) {
    const at = where(["publicHosts", host]);
    if (!endpoints.has(label))
      problems.push(`${at}: publicHosts.${host}: "${label}" is not a label of the registry`);
    else if (endpoints.get(label)?.public === false)
      problems.push(`${at}: publicHosts.${host}: "${label}" has no public endpoint in the registry`);
  }
  // Compared with the TCP peer's address, never looked up: a host name, or a block in a form BlockList does
  // not take, would match no peer, and every client behind the balancer would share its per-IP limits.
  for (const [index, entry] of config.trustedProxies.entries())
    if (addressBlock(entry) === undefined)
      problems.push(
        `${where(["trustedProxies", index])}: trustedProxies[${index}]: "${entry}" is not an IP address or a CIDR block (such as 10.0.0.7, 10.0.0.0/8 or fd00::/8)`,
      );
  if (!/^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.?$/.test(config.domain))
    problems.push(`${where(["domain"])}: domain "${config.domain}" is not a host name`);
  problems.push(...relationProblems(config, endpoints, where));
  if (problems.length > 0) throw new ConfigError(problems.join("\n"));
}

function isUrl(spec: string | UpstreamSpec): boolean {
  const { url, ws } = typeof spec === "string" ? { url: spec, ws: undefined } : spec;
  return URL.canParse(url) && (ws === undefined || URL.canParse(ws));
}

/**
 * Ajv's errors with what a value of several allowed forms (`anyOf`) failed said once: the form of the
 * value's own type, not every form's complaint. `ftp://x` as an upstream is "must match pattern ^https?://",
 * not that and "must be object" and "must match a schema in anyOf"; a value of none of the forms says
 * which forms it may have (`"*"` or a list of networks: `must be "*" or array`).
 */
function oneErrorPerProblem(errors: readonly ConfigProblem[]): ConfigProblem[] {
  const anyOfAt = new Map(errors.filter((e) => e.keyword === "anyOf").map((e) => [e.instancePath, e]));
  // a form's complaint about the value itself (not its type, not the one value it allows): folded into
  // its anyOf's one line
  const formOf = (e: ConfigProblem): ConfigProblem | undefined => {
    const anyOf = anyOfAt.get(e.instancePath);
    if (anyOf === undefined || (e.keyword !== "type" && e.keyword !== "const")) return undefined;
    return e.schemaPath.startsWith(`${anyOf.schemaPath}/`) ? anyOf : undefined;
  };
  // a refused member name comes twice: as what its pattern says, and as "property name must be valid"
  const kept = errors.filter((e) => formOf(e) === undefined && e.keyword !== "propertyNames");
  // said by a form's own complaint at it or within it, or by a value within it of none of its forms
  const said = (path: string) =>
    kept.some((e) =>
      e.keyword === "anyOf"
        ? e.instancePath.startsWith(`${path}/`)
        : e.instancePath === path || e.instancePath.startsWith(`${path}/`),
    );
  return kept
    .filter((e) => e.keyword !== "anyOf" || !said(e.instancePath))
    .map((e) => {
      if (e.keyword !== "anyOf") return e;
      const forms = errors
        .filter((form) => formOf(form) === e)
        .map((form) =>
          form.keyword === "const" ? JSON.stringify(form.params.allowedValue) : form.params.type,
        );
      return forms.length === 0 ? e : { ...e, message: `must be ${forms.join(" or ")}` };
    });
}
