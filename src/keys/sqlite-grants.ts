import Database from "better-sqlite3";
import type { QuotaSpentSource } from "../plans/quota-ledger.js";
import type { NoticeSink, QuotaNotice } from "../plans/quota-notices.js";
import { sqliteNative } from "../store/sqlite-addon.js";
import { type GrantRow, grantOf, grantsChangedAfter } from "./grant-rows.js";
import type { GrantFeed, KeyGrant } from "./grants.js";
import { spentQuery } from "./quota-spent.js";
import { FLUSH_IDS_KEPT_MS, type UsageBatch, type UsageSink } from "./usage.js";
import { LATENCY_COLUMNS } from "./usage-detail.js";

/** The grants of the embedded SQLite account store that changed after `revision`; also the control plane's. */
export function grantsSince(
  db: Database.Database,
  revision: number,
): { revision: number; grants: KeyGrant[] } {
  const current = (db.prepare("SELECT value FROM revision WHERE id = 1").get() as { value: number }).value;
  if (current === revision) return { revision, grants: [] };
  const rows = db.prepare(grantsChangedAfter("?")).all(revision) as GrantRow[];
  return { revision: current, grants: rows.map(grantOf) };
}

/**
 * The proxy's reader of the embedded store: a read-only connection to the SQLite file the control plane
 * writes (WAL mode lets it read while the control plane writes), asked for changes every `intervalMs`.
 * The query is one indexed read of the revision when nothing changed.
 */
export class SqliteGrantFeed implements GrantFeed {
  readonly #db: Database.Database;
  readonly #intervalMs: number;

  constructor(path: string, intervalMs: number) {
    try {
      this.#db = new Database(path, { readonly: true, fileMustExist: true, ...sqliteNative() });
      this.#db.pragma("busy_timeout = 2000");
      // Read once now, so a file that is not an account store fails the start, not the first request.
      grantsSince(this.#db, Number.MAX_SAFE_INTEGER);
    } catch (error) {
      throw new Error(
        `the account store ${path} cannot be read (${(error as Error).message}); the control plane creates it`,
      );
    }
    this.#intervalMs = intervalMs;
  }

  async changesSince(revision: number): Promise<{ revision: number; grants: KeyGrant[] }> {
    return grantsSince(this.#db, revision);
  }

  watch(listener: () => void): () => void {
    const timer = setInterval(listener, this.#intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  async close(): Promise<void> {
    this.#db.close();
  }
}

/**
 * The proxy's one write to the embedded store: usage counts, added in one transaction per flush
 * (keys/usage.ts) with the flush's id, as the PostgreSQL store's are. Its own connection, so the grant reader
 * stays read-only; WAL mode and the busy timeout let it share the file with the control plane and the other
 * proxy processes.
 */
export class SqliteUsageSink implements UsageSink, NoticeSink, QuotaSpentSource {
  readonly #db: Database.Database;
  readonly #add: Database.Statement;
  readonly #notice: Database.Statement;
  readonly #addMethod: Database.Statement;
  readonly #addCode: Database.Statement;
  readonly #recordFlush: Database.Statement;
  readonly #pruneFlushes: Database.Statement;

  constructor(path: string) {
    this.#db = new Database(path, { fileMustExist: true, ...sqliteNative() });
    this.#db.pragma("busy_timeout = 2000");
    this.#add = this.#db.prepare(
      `INSERT INTO usage (key_prefix, day, label, calls, errors, units) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (key_prefix, day, label) DO UPDATE SET calls = calls + excluded.calls,
         errors = errors + excluded.errors, units = units + excluded.units`,
    );
    this.#addMethod = this.#db.prepare(
      `INSERT INTO usage_methods (key_prefix, day, label, method, calls, units, errors, ms_sum, ${LATENCY_COLUMNS.join(", ")})
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ${LATENCY_COLUMNS.map(() => "?").join(", ")})
       ON CONFLICT (key_prefix, day, label, method) DO UPDATE SET calls = calls + excluded.calls,
         units = units + excluded.units, errors = errors + excluded.errors, ms_sum = ms_sum + excluded.ms_sum,
         ${LATENCY_COLUMNS.map((c) => `${c} = ${c} + excluded.${c}`).join(", ")}`,
    );
    this.#addCode = this.#db.prepare(
      `INSERT INTO usage_codes (key_prefix, day, label, code, count) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (key_prefix, day, label, code) DO UPDATE SET count = count + excluded.count`,
    );
    this.#recordFlush = this.#db.prepare(
      "INSERT INTO usage_flushes (id, flushed_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
    );
    this.#pruneFlushes = this.#db.prepare("DELETE FROM usage_flushes WHERE flushed_at < ?");
    this.#notice = this.#db.prepare(
      `INSERT INTO quota_notices (scope, period, threshold, account_id, key_prefix, plan, quota, resets_at, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    );
  }

  async notice(n: QuotaNotice): Promise<void> {
    this.#notice.run(
      n.scope,
      n.period,
      n.threshold,
      n.accountId,
      n.keyPrefix,
      n.plan,
      n.quota,
      n.resetsAt,
      Date.now(),
    );
  }

  async spent(scope: string, day: string): Promise<{ day: number; month: number }> {
    const query = spentQuery(scope, day, (name) => `@${name}`);
    const row = this.#db.prepare(query.sql).get(query.values) as
      | { day_units: number; month_units: number }
      | undefined;
    return { day: Number(row?.day_units ?? 0), month: Number(row?.month_units ?? 0) };
  }

  async add(batch: UsageBatch): Promise<void> {
    const now = Date.now();
    this.#db.transaction(() => {
      if (this.#recordFlush.run(batch.id, now).changes === 0) return;
      for (const r of batch.rows) this.#add.run(r.key, r.day, r.label, r.calls, r.errors, r.units);
      for (const r of batch.methods)
        this.#addMethod.run(
          r.key,
          r.day,
          r.label,
          r.method,
          r.calls,
          r.units,
          r.errors,
          r.msSum,
          ...r.latency,
        );
      for (const r of batch.codes) this.#addCode.run(r.key, r.day, r.label, r.code, r.count);
      this.#pruneFlushes.run(now - FLUSH_IDS_KEPT_MS);
    })();
  }

  async close(): Promise<void> {
    this.#db.close();
  }
}
