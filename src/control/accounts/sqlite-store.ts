import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { GatewayError } from "../../errors/table.js";
import type { KeyGrant } from "../../keys/grants.js";
import type { KeySettings } from "../../keys/key-settings.js";
import { grantsSince } from "../../keys/sqlite-grants.js";
import type { UsageRow } from "../../keys/usage.js";
import type { CodeRow, MethodRow } from "../../keys/usage-detail.js";
import { sqliteNative } from "../../store/sqlite-addon.js";
import { migrate } from "../../store/sqlite-migrations.js";
import {
  type AccountRow,
  type KeyRow,
  METHOD_SUMS,
  methodRowOf,
  NEW_KEY_COLUMNS,
  NOTICE_COLUMNS,
  newKeyValues,
  settingsText,
  toAccount,
  toKey,
} from "./rows.js";
import {
  type Account,
  type AccountStatus,
  type AccountStore,
  type IssueTerms,
  type KeyRecord,
  type NewKey,
  type PendingNotice,
  PrefixTaken,
  type TokenPurpose,
} from "./types.js";

/** The embedded default store: one SQLite file, migrated on open, no setup. */
export class SqliteAccountStore implements AccountStore {
  readonly #db: Database.Database;

  constructor(path: string) {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    // In the single executable (`node-gateway admin`) the addon comes from the file itself.
    this.#db = new Database(path, sqliteNative());
    this.#db.pragma("journal_mode = WAL");
    this.#db.pragma("foreign_keys = ON");
    this.#db.pragma("busy_timeout = 2000");
    migrate(this.#db);
  }

  async createAccount(email: string, status: AccountStatus, now: number): Promise<Account> {
    return this.#write(() => {
      const revision = this.#bump();
      const info = this.#db
        .prepare("INSERT INTO accounts (email, status, created_at, revision) VALUES (?, ?, ?, ?)")
        .run(email, status, now, revision);
      return this.#account(Number(info.lastInsertRowid)) as Account;
    });
  }

  async accountByEmail(email: string): Promise<Account | undefined> {
    const row = this.#db.prepare("SELECT * FROM accounts WHERE email = ?").get(email) as
      | AccountRow
      | undefined;
    return row && toAccount(row);
  }

  async account(id: number): Promise<Account | undefined> {
    return this.#account(id);
  }

  #account(id: number): Account | undefined {
    const row = this.#db.prepare("SELECT * FROM accounts WHERE id = ?").get(id) as AccountRow | undefined;
    return row && toAccount(row);
  }

  async listAccounts(): Promise<Account[]> {
    return (this.#db.prepare("SELECT * FROM accounts ORDER BY id").all() as AccountRow[]).map(toAccount);
  }

  async setAccountStatus(id: number, status: AccountStatus): Promise<void> {
    this.#write(() => {
      const revision = this.#bump();
      this.#db.prepare("UPDATE accounts SET status = ?, revision = ? WHERE id = ?").run(status, revision, id);
      // The account's keys change grant with it: caches must see them again.
      this.#db.prepare("UPDATE api_keys SET revision = ? WHERE account_id = ?").run(revision, id);
    });
  }

  async saveToken(
    tokenHash: string,
    accountId: number,
    purpose: TokenPurpose,
    expiresAt: number,
  ): Promise<void> {
    this.#db
      .prepare("INSERT INTO tokens (token_hash, account_id, purpose, expires_at) VALUES (?, ?, ?, ?)")
      .run(tokenHash, accountId, purpose, expiresAt);
  }

  async dropToken(tokenHash: string): Promise<void> {
    this.#db.prepare("DELETE FROM tokens WHERE token_hash = ?").run(tokenHash);
  }

  async takeToken(
    tokenHash: string,
    purpose: TokenPurpose,
    now: number,
  ): Promise<{ accountId: number } | "expired" | undefined> {
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

  async insertKey(key: NewKey, now: number, terms?: IssueTerms): Promise<KeyRecord> {
    try {
      // one IMMEDIATE transaction, written synchronously: no other issue reads the account in between
      return this.#write(() => {
        if (terms !== undefined) {
          const account = this.#account(key.accountId);
          if (account === undefined)
            throw new GatewayError("INVALID_FIELD", { field: "account", reason: "no account has this id" });
          const keys = this.#db
            .prepare("SELECT * FROM api_keys WHERE account_id = ? ORDER BY id")
            .all(key.accountId) as KeyRow[];
          terms.check(account, keys.map(toKey));
          if (terms.freeTest === true)
            this.#db
              .prepare("UPDATE accounts SET free_tests_used = free_tests_used + 1 WHERE id = ?")
              .run(key.accountId);
        }
        const revision = this.#bump();
        const info = this.#db
          .prepare(
            `INSERT INTO api_keys (${NEW_KEY_COLUMNS}) VALUES (${NEW_KEY_COLUMNS.split(",").map(() => "?")})`,
          )
          .run(...newKeyValues(key, now, revision));
        const id = Number(info.lastInsertRowid);
        if (terms?.replaces !== undefined)
          this.#db
            .prepare(
              "UPDATE api_keys SET expires_at = MIN(COALESCE(expires_at, ?), ?), replaced_by = ?, revision = ? WHERE id = ?",
            )
            .run(terms.replaces.expiresAt, terms.replaces.expiresAt, id, revision, terms.replaces.id);
        return this.#key(id) as KeyRecord;
      });
    } catch (error) {
      if (error instanceof Database.SqliteError && error.message.includes("api_keys.prefix"))
        throw new PrefixTaken(key.prefix);
      throw error;
    }
  }

  async keys(accountId: number): Promise<KeyRecord[]> {
    return (
      this.#db.prepare("SELECT * FROM api_keys WHERE account_id = ? ORDER BY id").all(accountId) as KeyRow[]
    ).map(toKey);
  }

  async key(id: number): Promise<KeyRecord | undefined> {
    return this.#key(id);
  }

  #key(id: number): KeyRecord | undefined {
    const row = this.#db.prepare("SELECT * FROM api_keys WHERE id = ?").get(id) as KeyRow | undefined;
    return row && toKey(row);
  }

  async setKeySettings(id: number, settings: KeySettings): Promise<void> {
    this.#write(() => {
      const revision = this.#bump();
      this.#db
        .prepare("UPDATE api_keys SET settings = ?, revision = ? WHERE id = ?")
        .run(settingsText(settings), revision, id);
    });
  }

  async revokeKey(id: number, now: number): Promise<void> {
    this.#write(() => {
      const revision = this.#bump();
      this.#db
        .prepare("UPDATE api_keys SET status = 'revoked', revoked_at = ?, revision = ? WHERE id = ?")
        .run(now, revision, id);
    });
  }

  async usage(prefixes: readonly string[], from: string, to: string): Promise<UsageRow[]> {
    if (prefixes.length === 0) return [];
    return this.#db
      .prepare(
        `SELECT key_prefix AS key, day, label, calls, errors, units FROM usage
          WHERE key_prefix IN (${prefixes.map(() => "?").join(",")}) AND day BETWEEN ? AND ?
          ORDER BY day, key_prefix, label`,
      )
      .all(...prefixes, from, to) as UsageRow[];
  }

  async usageMethods(prefixes: readonly string[], from: string, to: string): Promise<MethodRow[]> {
    if (prefixes.length === 0) return [];
    const rows = this.#db
      .prepare(
        `SELECT ${METHOD_SUMS} FROM usage_methods
          WHERE key_prefix IN (${prefixes.map(() => "?").join(",")}) AND day BETWEEN ? AND ?
          GROUP BY key_prefix, label, method`,
      )
      .all(...prefixes, from, to) as Record<string, unknown>[];
    return rows.map(methodRowOf);
  }

  async usageCodes(prefixes: readonly string[], from: string, to: string): Promise<CodeRow[]> {
    if (prefixes.length === 0) return [];
    return this.#db
      .prepare(
        `SELECT key_prefix AS key, MAX(day) AS day, label, code, SUM(count) AS count FROM usage_codes
          WHERE key_prefix IN (${prefixes.map(() => "?").join(",")}) AND day BETWEEN ? AND ?
          GROUP BY key_prefix, label, code`,
      )
      .all(...prefixes, from, to) as CodeRow[];
  }

  async unsentNotices(): Promise<PendingNotice[]> {
    return this.#db
      .prepare(
        `SELECT ${NOTICE_COLUMNS} FROM quota_notices n JOIN accounts a ON a.id = n.account_id
          WHERE n.sent_at IS NULL ORDER BY n.created_at LIMIT 100`,
      )
      .all() as PendingNotice[];
  }

  async markNoticeSent(notice: PendingNotice, now: number): Promise<boolean> {
    const { changes } = this.#db
      .prepare(
        "UPDATE quota_notices SET sent_at = ? WHERE scope = ? AND period = ? AND threshold = ? AND quota = ? AND sent_at IS NULL",
      )
      .run(now, notice.scope, notice.period, notice.threshold, notice.quota);
    return changes === 1;
  }

  async unmarkNotice(notice: PendingNotice): Promise<void> {
    this.#db
      .prepare(
        "UPDATE quota_notices SET sent_at = NULL WHERE scope = ? AND period = ? AND threshold = ? AND quota = ?",
      )
      .run(notice.scope, notice.period, notice.threshold, notice.quota);
  }

  async changesSince(revision: number): Promise<{ revision: number; grants: KeyGrant[] }> {
    return grantsSince(this.#db, revision);
  }

  async close(): Promise<void> {
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
