import type { KeyGrant } from "./grants.js";
import type { KeySettings } from "./key-settings.js";

// What both account stores' grant readers share (sqlite-grants.ts, postgres-grants.ts): the query, in each
// store's own placeholder, and how a row becomes a grant.

/** A key row joined with its account's status: what both stores' readers select (grantsChangedAfter). */
export interface GrantRow {
  id: number;
  account_id: number;
  key_hash: string;
  prefix: string;
  plan: KeyGrant["plan"];
  networks: string;
  archive: number;
  rate_per_second: number | null;
  rate_burst: number | null;
  status: KeyGrant["status"];
  expires_at: number | null;
  revision: number;
  account_status: KeyGrant["accountStatus"] | null;
  settings: string | null;
  quota_prefix: string | null;
}

/**
 * The grants whose key or account changed after one revision, the query's one parameter, written with
 * the store's placeholder: `?` for SQLite, `$1` for PostgreSQL.
 */
export function grantsChangedAfter(placeholder: "?" | "$1"): string {
  return `SELECT k.id, k.account_id, k.key_hash, k.prefix, k.plan, k.networks, k.archive, k.rate_per_second,
         k.rate_burst, k.status, k.expires_at, k.revision, k.settings, k.quota_prefix,
         a.status AS account_status
    FROM api_keys k JOIN accounts a ON a.id = k.account_id
   WHERE k.revision > ${placeholder} ORDER BY k.revision`;
}

/** A key row's scopes as the store keeps them: networks as JSON, archive as 0/1, the rate in two columns. */
export function scopesOf(row: {
  networks: string;
  archive: number;
  rate_per_second: number | null;
  rate_burst: number | null;
}): Pick<KeyGrant, "networks" | "archive" | "rate"> {
  return {
    networks: JSON.parse(row.networks) as string[] | "*",
    archive: row.archive === 1,
    rate:
      row.rate_per_second === null || row.rate_burst === null
        ? undefined
        : { perSecond: row.rate_per_second, burst: row.rate_burst },
  };
}

export function grantOf(row: GrantRow): KeyGrant {
  return {
    id: row.id,
    accountId: row.account_id,
    keyHash: row.key_hash,
    prefix: row.prefix,
    plan: row.plan,
    ...scopesOf(row),
    status: row.status,
    expiresAt: row.expires_at ?? undefined,
    accountStatus: row.account_status ?? "closed",
    revision: row.revision,
    settings: row.settings === null ? undefined : (JSON.parse(row.settings) as KeySettings),
    quotaScope: row.quota_prefix ?? row.prefix,
  };
}
