import type { Endpoint } from "../registry/types.js";
import { isPostgresUrl } from "../store/database-url.js";
import type { ConfigPath } from "./environment.js";
import type { GatewayConfig } from "./types.js";

/**
 * What the schema cannot say of settings that name registry things or each other, each problem as a line
 * that says where it was set: an upstream list for a mount the label does not have (its calls would find
 * no upstream), a key for a network the registry does not have, a bound below its own floor, a store
 * address that is neither a PostgreSQL URL nor a path (a mistyped URL would become a SQLite file by that
 * name), a Redis URL whose database is not a number.
 */
export function relationProblems(
  config: GatewayConfig,
  endpoints: ReadonlyMap<string, Endpoint>,
  where: (path: ConfigPath, key?: string) => string,
): string[] {
  const problems: string[] = [];
  for (const [label, upstreams] of Object.entries(config.upstreams)) {
    const endpoint = endpoints.get(label);
    if (endpoint === undefined || Array.isArray(upstreams)) continue;
    const mounts = endpoint.mounts.map((m) => m.path);
    for (const mount of Object.keys(upstreams))
      if (mount !== "*" && !mounts.includes(mount))
        problems.push(
          `${where(["upstreams", label], mount)}: upstreams.${label}: "${mount}" is not a mount of ${label} (its mounts: ${mounts.join(", ")})`,
        );
  }
  // a static key is known by its first 8 characters (keys/static-store.ts): in logs, usage, its rate and quota
  const ids = new Map<string, number>();
  for (const [index, key] of config.keys.entries()) {
    const id = key.key.slice(0, 8);
    const first = ids.get(id);
    if (first === undefined) ids.set(id, index);
    else
      problems.push(
        `${where(["keys", index, "key"])}: keys[${index}].key begins with the same 8 characters as keys[${first}].key: they would share one id, and with it their rate, quota and usage; make their first 8 characters differ`,
      );
  }
  const codes = new Set([...endpoints.values()].map((e) => e.code));
  for (const [index, key] of config.keys.entries()) {
    if (key.networks === "*") continue;
    for (const [i, code] of key.networks.entries())
      if (!codes.has(code))
        problems.push(
          `${where(["keys", index, "networks", i])}: keys[${index}].networks: "${code}" is not a network of the registry`,
        );
  }
  const { hedgeMinMs, hedgeMaxMs } = config.limits.upstream;
  if (hedgeMinMs > hedgeMaxMs)
    problems.push(
      `${where(["limits", "upstream", "hedgeMinMs"])}: limits.upstream.hedgeMinMs (${hedgeMinMs}) is above hedgeMaxMs (${hedgeMaxMs})`,
    );
  for (const [label, methods] of Object.entries(config.blockRanges)) {
    const endpoint = endpoints.get(label);
    if (endpoint === undefined) continue;
    const ranged = new Set(
      endpoint.mounts.flatMap((m) => Object.keys(m.policy.jsonrpc?.reads?.ranges ?? {})),
    );
    for (const [method, bounds] of Object.entries(methods)) {
      const at = where(["blockRanges", label, method]);
      if (!ranged.has(method))
        problems.push(
          `${at}: blockRanges.${label}: ${method} takes no block range (${label}'s: ${[...ranged].join(", ") || "none"})`,
        );
      else if (
        bounds.splitAbove !== undefined &&
        bounds.refuseAbove !== undefined &&
        bounds.splitAbove > bounds.refuseAbove
      )
        problems.push(
          `${at}: blockRanges.${label}.${method}: splitAbove (${bounds.splitAbove}) is above refuseAbove (${bounds.refuseAbove}), so no range would be split`,
        );
    }
  }
  // Never repeated: the URL holds Redis' password. ioredis reads its path as the database to SELECT, and
  // SELECTs NaN for a word (whose error reply ended the proxy).
  const redis = config.sharedLimits?.redis;
  if (redis !== undefined) {
    const at = where(["sharedLimits", "redis"]);
    if (!URL.canParse(redis)) problems.push(`${at}: sharedLimits.redis is not a URL`);
    else if (!/^\/?(\d+)?$/.test(new URL(redis).pathname))
      problems.push(
        `${at}: sharedLimits.redis: the path after the address is a database index, a whole number (redis://host:6379/2), or nothing`,
      );
  }
  const database = config.accounts?.database;
  if (database !== undefined && /^[A-Za-z][A-Za-z0-9+.-]*:/.test(database) && !isPostgresUrl(database))
    problems.push(
      `${where(["accounts", "database"])}: accounts.database starts "${database.slice(0, database.indexOf(":") + 1)}": a store is a postgres:// or postgresql:// URL, or a SQLite file's path`,
    );
  return problems;
}
