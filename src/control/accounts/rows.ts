import { scopesOf } from "../../keys/grant-rows.js";
import type { KeySettings } from "../../keys/key-settings.js";
import { LATENCY_COLUMNS, type MethodRow } from "../../keys/usage-detail.js";
import type { Account, AccountStatus, KeyRecord, NewKey } from "./types.js";

// Rows as both stores keep them (the same columns in SQLite and PostgreSQL), and the records they make.

export interface AccountRow {
  id: number;
  email: string;
  status: AccountStatus;
  created_at: number;
  free_tests_used: number;
}

export interface KeyRow {
  id: number;
  account_id: number;
  key_hash: string;
  prefix: string;
  plan: KeyRecord["plan"];
  networks: string;
  archive: number;
  rate_per_second: number | null;
  rate_burst: number | null;
  status: KeyRecord["status"];
  created_at: number;
  expires_at: number | null;
  replaced_by: number | null;
  revision: number;
  settings: string | null;
  quota_prefix: string | null;
}

export function toAccount(row: AccountRow): Account {
  return {
    id: row.id,
    email: row.email,
    status: row.status,
    createdAt: row.created_at,
    freeTestsUsed: row.free_tests_used,
  };
}

export function toKey(row: KeyRow): KeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    prefix: row.prefix,
    plan: row.plan,
    ...scopesOf(row),
    status: row.status,
    createdAt: row.created_at,
    expiresAt: row.expires_at ?? undefined,
    replacedBy: row.replaced_by ?? undefined,
    settings: row.settings === null ? {} : (JSON.parse(row.settings) as KeySettings),
    quotaPrefix: row.quota_prefix ?? row.prefix,
  };
}

/** The columns a new key's row is inserted with, in the order of `newKeyValues`. */
export const NEW_KEY_COLUMNS =
  "account_id,key_hash,prefix,plan,networks,archive,rate_per_second,rate_burst,status,created_at,expires_at,revision,settings,quota_prefix";

/** A new key's row, as both stores write it. */
export function newKeyValues(key: NewKey, now: number, revision: number): unknown[] {
  return [
    key.accountId,
    key.keyHash,
    key.prefix,
    key.plan,
    JSON.stringify(key.networks),
    key.archive ? 1 : 0,
    key.rate?.perSecond ?? null,
    key.rate?.burst ?? null,
    "active",
    now,
    key.expiresAt ?? null,
    revision,
    settingsText(key.settings ?? {}),
    key.quotaPrefix ?? null,
  ];
}

/** A quota notice's columns, as PendingNotice names them, from `quota_notices n JOIN accounts a`. */
export const NOTICE_COLUMNS = `n.scope, n.period, n.threshold, n.account_id AS "accountId",
  n.key_prefix AS "keyPrefix", n.plan, n.quota, n.resets_at AS "resetsAt", a.email`;

/** The columns of a per-method usage query, summed over its days (`day` is the range's last). */
export const METHOD_SUMS = `key_prefix AS key, MAX(day) AS day, label, method, SUM(calls) AS calls,
  SUM(units) AS units, SUM(errors) AS errors, SUM(ms_sum) AS "msSum", ${LATENCY_COLUMNS.map((c) => `SUM(${c}) AS ${c}`).join(", ")}`;

/** A summed per-method row as the stores answer it: its ten latency buckets as one list. */
export function methodRowOf(row: Record<string, unknown>): MethodRow {
  const latency = LATENCY_COLUMNS.map((column) => Number(row[column] ?? 0));
  return {
    key: String(row.key),
    day: String(row.day),
    label: String(row.label),
    method: String(row.method),
    calls: Number(row.calls),
    units: Number(row.units),
    errors: Number(row.errors),
    msSum: Number(row.msSum),
    latency,
  };
}

/** Settings as the store keeps them: JSON, or NULL when they restrict nothing. */
export function settingsText(settings: KeySettings): string | null {
  return Object.keys(settings).length === 0 ? null : JSON.stringify(settings);
}
