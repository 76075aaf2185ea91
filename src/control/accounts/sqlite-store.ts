import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import type { KeyGrant } from "../../keys/grants.js";
import { grantsSince, scopesOf } from "../../keys/sqlite-grants.js";
import type { UsageRow } from "../../keys/usage.js";
import { migrate } from "./migrations.js";
import type { Account, AccountStatus, AccountStore, KeyRecord, NewKey, TokenPurpose } from "./types.js";

interface AccountRow {
  id: number;
  email: string;
  status: AccountStatus;
  created_at: number;
  free_tests_used: number;
}

interface KeyRow {
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
}

/** The embedded default store: one SQLite file, migrated on open, no setup. */
export class SqliteAccountStore implements AccountStore {
  readonly #db: Database.Database;

  constructor(path: string) {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    this.#db = new Database(path);
    this.#db.pragma("journal_mode = WAL");
    this.#db.pragma("foreign_keys = ON");
    this.#db.pragma("busy_timeout = 2000");
    migrate(this.#db);
  }

  createAccount(email: string, status: AccountStatus, now: number): Account {
    return this.#write(() => {
      const revision = this.#bump();
      const info = this.#db
        .prepare("INSERT INTO accounts (email, status, created_at, revision) VALUES (?, ?, ?, ?)")
        .run(email, status, now, revision);
      return this.account(Number(info.lastInsertRowid)) as Account;
    });
  }

  accountByEmail(email: string): Account | undefined {
    const row = this.#db.prepare("SELECT * FROM accounts WHERE email = ?").get(email) as
      | AccountRow
      | undefined;
    return row && toAccount(row);
  }

  account(id: number): Account | undefined {
    const row = this.#db.prepare("SELECT * FROM accounts WHERE id = ?").get(id) as AccountRow | undefined;
    return row && toAccount(row);
  }

  listAccounts(): Account[] {
    return (this.#db.prepare("SELECT * FROM accounts ORDER BY id").all() as AccountRow[]).map(toAccount);
  }

  setAccountStatus(id: number, status: AccountStatus): void {
    this.#write(() => {
      const revision = this.#bump();
      this.#db.prepare("UPDATE accounts SET status = ?, revision = ? WHERE id = ?").run(status, revision, id);
      // The account's keys change grant with it: caches must see them again.
      this.#db.prepare("UPDATE api_keys SET revision = ? WHERE account_id = ?").run(revision, id);
    });
  }

  countFreeTest(id: number): void {
    this.#db.prepare("UPDATE accounts SET free_tests_used = free_tests_used + 1 WHERE id = ?").run(id);
  }

  saveToken(tokenHash: string, accountId: number, purpose: TokenPurpose, expiresAt: number): void {
    this.#db
      .prepare("INSERT INTO tokens (token_hash, account_id, purpose, expires_at) VALUES (?, ?, ?, ?)")
      .run(tokenHash, accountId, purpose, expiresAt);
  }

  takeToken(
    tokenHash: string,
    purpose: TokenPurpose,
    now: number,
  ): { accountId: number } | "expired" | undefined {
    return this.#write(() => {
      const row = this.#db
        .prepare("SELECT account_id, expires_at, used_at FROM tokens WHERE token_hash = ? AND purpose = ?")
        .get(tokenHash, purpose) as
        | { account_id: number; expires_at: number; used_at: number | null }
        | undefined;
      if (row === undefined || row.used_at !== null) return undefined;
      if (row.expires_at <= now) return "expired";
      if (purpose !== "session")
        this.#db.prepare("UPDATE tokens SET used_at = ? WHERE token_hash = ?").run(now, tokenHash);
      return { accountId: row.account_id };
    });
  }

  insertKey(key: NewKey, now: number): KeyRecord {
    return this.#write(() => {
      const revision = this.#bump();
      const info = this.#db
        .prepare(
          `INSERT INTO api_keys (account_id, key_hash, prefix, plan, networks, archive, rate_per_second, rate_burst,
             status, created_at, expires_at, revision) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?)`,
        )
        .run(
          key.accountId,
          key.keyHash,
          key.prefix,
          key.plan,
          JSON.stringify(key.networks),
          key.archive ? 1 : 0,
          key.rate?.perSecond ?? null,
          key.rate?.burst ?? null,
          now,
          key.expiresAt ?? null,
          revision,
        );
      return this.key(Number(info.lastInsertRowid)) as KeyRecord;
    });
  }

  keys(accountId: number): KeyRecord[] {
    return (
      this.#db.prepare("SELECT * FROM api_keys WHERE account_id = ? ORDER BY id").all(accountId) as KeyRow[]
    ).map(toKey);
  }

  key(id: number): KeyRecord | undefined {
    const row = this.#db.prepare("SELECT * FROM api_keys WHERE id = ?").get(id) as KeyRow | undefined;
    return row && toKey(row);
  }

  revokeKey(id: number, now: number): void {
    this.#write(() => {
      const revision = this.#bump();
      this.#db
        .prepare("UPDATE api_keys SET status = 'revoked', revoked_at = ?, revision = ? WHERE id = ?")
        .run(now, revision, id);
    });
  }

  retireKey(id: number, expiresAt: number, replacedBy: number): void {
    this.#write(() => {
      const revision = this.#bump();
      this.#db
        .prepare(
          "UPDATE api_keys SET expires_at = MIN(COALESCE(expires_at, ?), ?), replaced_by = ?, revision = ? WHERE id = ?",
        )
        .run(expiresAt, expiresAt, replacedBy, revision, id);
    });
  }

  usage(prefixes: readonly string[], from: string, to: string): UsageRow[] {
    if (prefixes.length === 0) return [];
    return this.#db
      .prepare(
        `SELECT key_prefix AS key, day, label, calls, errors FROM usage
          WHERE key_prefix IN (${prefixes.map(() => "?").join(",")}) AND day BETWEEN ? AND ?
          ORDER BY day, key_prefix, label`,
      )
      .all(...prefixes, from, to) as UsageRow[];
  }

  changesSince(revision: number): { revision: number; grants: KeyGrant[] } {
    return grantsSince(this.#db, revision);
  }

  close(): void {
    this.#db.close();
  }

  #bump(): number {
    this.#db.prepare("UPDATE revision SET value = value + 1 WHERE id = 1").run();
    return (this.#db.prepare("SELECT value FROM revision WHERE id = 1").get() as { value: number }).value;
  }

  #write<T>(work: () => T): T {
    return this.#db.transaction(work).immediate();
  }
}

function toAccount(row: AccountRow): Account {
  return {
    id: row.id,
    email: row.email,
    status: row.status,
    createdAt: row.created_at,
    freeTestsUsed: row.free_tests_used,
  };
}

function toKey(row: KeyRow): KeyRecord {
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
  };
}
