import { scopeKeys } from "../plans/quota-ledger.js";

/** A query of what a quota's scope spent in a day and in its month, with its values by name. */
export interface SpentQuery {
  readonly sql: string;
  readonly values: Readonly<Record<string, string | number>>;
}

/**
 * What a quota's scope (pipeline/stages.ts) spent on `day` and in its month, from the usage counts the
 * proxies flush (keys/usage.ts): an account's keys of one plan, or a line of rotated keys by the first
 * one's prefix. `param` writes a value's placeholder by its name, as the store's driver names them.
 */
export function spentQuery(scope: string, day: string, param: (name: string) => string): SpentQuery {
  const keys = scopeKeys(scope);
  const own =
    "prefix" in keys
      ? { where: `COALESCE(k.quota_prefix, k.prefix) = ${param("prefix")}`, values: { prefix: keys.prefix } }
      : {
          where: `k.account_id = ${param("account")} AND k.plan = ${param("plan")}`,
          values: { account: keys.accountId, plan: keys.plan },
        };
  return {
    sql: `SELECT COALESCE(SUM(CASE WHEN u.day = ${param("day")} THEN u.units ELSE 0 END), 0) AS day_units,
            COALESCE(SUM(u.units), 0) AS month_units
          FROM usage u JOIN api_keys k ON k.prefix = u.key_prefix
          WHERE u.day >= ${param("monthStart")} AND u.day <= ${param("day")} AND ${own.where}`,
    values: { day, monthStart: `${day.slice(0, 7)}-01`, ...own.values },
  };
}
