import Database from "better-sqlite3";
import { sqliteNative } from "../store/sqlite-addon.js";
import type { GrantFeed, KeyGrant } from "./grants.js";
import type { UsageRow, UsageSink } from "./usage.js";

/** A key row joined with its account's status: what both stores' readers select (GRANTS_CHANGED). */
export interface GrantRow {
  id: number;
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
}

/** The grants of the embedded SQLite account store that changed after `revision`; also the control plane's. */
export function grantsSince(
  db: Database.Database,
  revision: number,
): { revision: number; grants: KeyGrant[] } {
  const current = (db.prepare("SELECT value FROM revision WHERE id = 1").get() as { value: number }).value;
  if (current === revision) return { revision, grants: [] };
  const rows = db.prepare(GRANTS_CHANGED).all(revision) as GrantRow[];
  return { revision: current, grants: rows.map(grantOf) };
}

/** The grants whose key or account changed after the revision given as the one parameter. */
export const GRANTS_CHANGED = `SELECT k.id, k.key_hash, k.prefix, k.plan, k.networks, k.archive, k.rate_per_second,
         k.rate_burst, k.status, k.expires_at, k.revision, a.status AS account_status
    FROM api_keys k JOIN accounts a ON a.id = k.account_id
   WHERE k.revision > ? ORDER BY k.revision`;

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
    keyHash: row.key_hash,
    prefix: row.prefix,
    plan: row.plan,
    ...scopesOf(row),
    status: row.status,
    expiresAt: row.expires_at ?? undefined,
    accountStatus: row.account_status ?? "closed",
    revision: row.revision,
  };
}

/**
 * The proxy's one write to the embedded store: usage counts, added in one transaction per flush
 * (keys/usage.ts). Its own connection, so the grant reader stays read-only; WAL mode and the busy timeout
 * let it share the file with the control plane and the other proxy processes.
 */
export class SqliteUsageSink implements UsageSink {
  readonly #db: Database.Database;
  readonly #add: Database.Statement;

  constructor(path: string) {
    this.#db = new Database(path, { fileMustExist: true, ...sqliteNative() });
    this.#db.pragma("busy_timeout = 2000");
    this.#add = this.#db.prepare(
      `INSERT INTO usage (key_prefix, day, label, calls, errors) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (key_prefix, day, label) DO UPDATE SET calls = calls + excluded.calls, errors = errors + excluded.errors`,
    );
  }

  async add(rows: readonly UsageRow[]): Promise<void> {
    this.#db.transaction(() => {
      for (const row of rows) this.#add.run(row.key, row.day, row.label, row.calls, row.errors);
    })();
  }

  async close(): Promise<void> {
    this.#db.close();
  }
}
