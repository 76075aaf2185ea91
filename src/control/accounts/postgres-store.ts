import type pg from "pg";
import { GatewayError } from "../../errors/table.js";
import type { KeyGrant } from "../../keys/grants.js";
import type { KeySettings } from "../../keys/key-settings.js";
import { postgresGrantsSince } from "../../keys/postgres-grants.js";
import type { UsageRow } from "../../keys/usage.js";
import type { CodeRow, MethodRow } from "../../keys/usage-detail.js";
import { redacted, redactedText } from "../../store/database-url.js";
import { GRANTS_CHANNEL, isUnavailable, openPool, takeClient } from "../../store/postgres.js";
import { migratePostgres } from "./postgres-migrations.js";
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

type Query = <R extends pg.QueryResultRow>(sql: string, values?: unknown[]) => Promise<R[]>;

/**
 * The account store on PostgreSQL, for many proxy instances and one control plane (docs/deployment.md).
 * The same tables and versions as the SQLite store. Every change to a key or an account bumps the one
 * revision row inside its transaction, which orders the changes, and announces the revision with NOTIFY
 * on commit: proxies LISTEN (keys/postgres-grants.ts). While the server cannot be reached, every call
 * fails with STORE_UNAVAILABLE (503).
 */
export class PostgresAccountStore implements AccountStore {
  readonly #pool: pg.Pool;

  private constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  /** Connects and applies the migrations the database has not seen. */
  static async open(url: string): Promise<PostgresAccountStore> {
    const pool = openPool(url, 8);
    try {
      const client = await takeClient(pool);
      try {
        await migratePostgres(client);
      } finally {
        client.release();
      }
    } catch (error) {
      await pool.end();
      // pg's message may repeat the URL or its password
      const why = redactedText((error as Error).message, url);
      throw new Error(`the account store ${redacted(url)} cannot be opened: ${why}`);
    }
    return new PostgresAccountStore(pool);
  }

  async createAccount(email: string, status: AccountStatus, now: number): Promise<Account> {
    return this.#change(async (query, revision) => {
      const [row] = await query<AccountRow>(
        "INSERT INTO accounts (email, status, created_at, revision) VALUES ($1, $2, $3, $4) RETURNING *",
        [email, status, now, revision],
      );
      return toAccount(row as AccountRow);
    });
  }

  async accountByEmail(email: string): Promise<Account | undefined> {
    const [row] = await this.#query<AccountRow>("SELECT * FROM accounts WHERE lower(email) = lower($1)", [
      email,
    ]);
    return row && toAccount(row);
  }

  async account(id: number): Promise<Account | undefined> {
    const [row] = await this.#query<AccountRow>("SELECT * FROM accounts WHERE id = $1", [id]);
    return row && toAccount(row);
  }

  async listAccounts(): Promise<Account[]> {
    return (await this.#query<AccountRow>("SELECT * FROM accounts ORDER BY id")).map(toAccount);
  }

  async setAccountStatus(id: number, status: AccountStatus): Promise<void> {
    await this.#change(async (query, revision) => {
      await query("UPDATE accounts SET status = $1, revision = $2 WHERE id = $3", [status, revision, id]);
      // The account's keys change grant with it: caches must see them again.
      await query("UPDATE api_keys SET revision = $1 WHERE account_id = $2", [revision, id]);
    });
  }

  async saveToken(
    tokenHash: string,
    accountId: number,
    purpose: TokenPurpose,
    expiresAt: number,
  ): Promise<void> {
    await this.#query(
      "INSERT INTO tokens (token_hash, account_id, purpose, expires_at) VALUES ($1, $2, $3, $4)",
      [tokenHash, accountId, purpose, expiresAt],
    );
  }

  async dropToken(tokenHash: string): Promise<void> {
    await this.#query("DELETE FROM tokens WHERE token_hash = $1", [tokenHash]);
  }

  async takeToken(
    tokenHash: string,
    purpose: TokenPurpose,
    now: number,
  ): Promise<{ accountId: number } | "expired" | undefined> {
    return this.#transaction(async (query) => {
      const [row] = await query<{ account_id: number; expires_at: number; used_at: number | null }>(
        "SELECT account_id, expires_at, used_at FROM tokens WHERE token_hash = $1 AND purpose = $2 FOR UPDATE",
        [tokenHash, purpose],
      );
      if (row === undefined || row.used_at !== null) return undefined;
      if (row.expires_at <= now) return "expired";
      if (purpose !== "session")
        await query("UPDATE tokens SET used_at = $1 WHERE token_hash = $2", [now, tokenHash]);
      return { accountId: row.account_id };
    });
  }

  async insertKey(key: NewKey, now: number, terms?: IssueTerms): Promise<KeyRecord> {
    try {
      return await this.#change(async (query, revision) => {
        if (terms !== undefined) {
          // the account's row, held to the commit: its other issues wait here, then read what this one wrote
          const [account] = await query<AccountRow>("SELECT * FROM accounts WHERE id = $1 FOR UPDATE", [
            key.accountId,
          ]);
          if (account === undefined)
            throw new GatewayError("INVALID_FIELD", { field: "account", reason: "no account has this id" });
          const keys = await query<KeyRow>("SELECT * FROM api_keys WHERE account_id = $1 ORDER BY id", [
            key.accountId,
          ]);
          terms.check(toAccount(account), keys.map(toKey));
          if (terms.freeTest === true)
            await query("UPDATE accounts SET free_tests_used = free_tests_used + 1 WHERE id = $1", [
              key.accountId,
            ]);
        }
        const [row] = await query<KeyRow>(
          `INSERT INTO api_keys (${NEW_KEY_COLUMNS})
           VALUES (${NEW_KEY_COLUMNS.split(",").map((_, i) => `$${i + 1}`)}) RETURNING *`,
          newKeyValues(key, now, revision),
        );
        const record = toKey(row as KeyRow);
        if (terms?.replaces !== undefined)
          await query(
            "UPDATE api_keys SET expires_at = LEAST(COALESCE(expires_at, $1), $1), replaced_by = $2, revision = $3 WHERE id = $4",
            [terms.replaces.expiresAt, record.id, revision, terms.replaces.id],
          );
        return record;
      });
    } catch (error) {
      // unique_violation on the prefix's index (migration 7)
      if (
        (error as pg.DatabaseError).code === "23505" &&
        (error as pg.DatabaseError).constraint === "api_keys_prefix"
      )
        throw new PrefixTaken(key.prefix);
      throw error;
    }
  }

  async keys(accountId: number): Promise<KeyRecord[]> {
    return (
      await this.#query<KeyRow>("SELECT * FROM api_keys WHERE account_id = $1 ORDER BY id", [accountId])
    ).map(toKey);
  }

  async key(id: number): Promise<KeyRecord | undefined> {
    const [row] = await this.#query<KeyRow>("SELECT * FROM api_keys WHERE id = $1", [id]);
    return row && toKey(row);
  }

  async setKeySettings(id: number, settings: KeySettings): Promise<void> {
    await this.#change(async (query, revision) => {
      await query("UPDATE api_keys SET settings = $1, revision = $2 WHERE id = $3", [
        settingsText(settings),
        revision,
        id,
      ]);
    });
  }

  async revokeKey(id: number, now: number): Promise<void> {
    await this.#change(async (query, revision) => {
      await query("UPDATE api_keys SET status = 'revoked', revoked_at = $1, revision = $2 WHERE id = $3", [
        now,
        revision,
        id,
      ]);
    });
  }

  async usage(prefixes: readonly string[], from: string, to: string): Promise<UsageRow[]> {
    if (prefixes.length === 0) return [];
    return this.#query<UsageRow & pg.QueryResultRow>(
      `SELECT key_prefix AS key, day, label, calls, errors, units FROM usage
        WHERE key_prefix = ANY($1::text[]) AND day BETWEEN $2 AND $3
        ORDER BY day, key_prefix, label`,
      [prefixes, from, to],
    );
  }

  async usageMethods(prefixes: readonly string[], from: string, to: string): Promise<MethodRow[]> {
    if (prefixes.length === 0) return [];
    const rows = await this.#query(
      `SELECT ${METHOD_SUMS} FROM usage_methods
        WHERE key_prefix = ANY($1::text[]) AND day BETWEEN $2 AND $3
        GROUP BY key_prefix, label, method`,
      [prefixes, from, to],
    );
    return rows.map(methodRowOf);
  }

  async usageCodes(prefixes: readonly string[], from: string, to: string): Promise<CodeRow[]> {
    if (prefixes.length === 0) return [];
    const rows = await this.#query(
      `SELECT key_prefix AS key, MAX(day) AS day, label, code, SUM(count) AS count FROM usage_codes
        WHERE key_prefix = ANY($1::text[]) AND day BETWEEN $2 AND $3
        GROUP BY key_prefix, label, code`,
      [prefixes, from, to],
    );
    return rows.map((row) => ({ ...(row as unknown as CodeRow), count: Number(row.count) }));
  }

  async unsentNotices(): Promise<PendingNotice[]> {
    return this.#query<PendingNotice & pg.QueryResultRow>(
      `SELECT ${NOTICE_COLUMNS} FROM quota_notices n JOIN accounts a ON a.id = n.account_id
        WHERE n.sent_at IS NULL ORDER BY n.created_at LIMIT 100`,
    );
  }

  async markNoticeSent(notice: PendingNotice, now: number): Promise<boolean> {
    const rows = await this.#query(
      `UPDATE quota_notices SET sent_at = $1
        WHERE scope = $2 AND period = $3 AND threshold = $4 AND quota = $5 AND sent_at IS NULL RETURNING scope`,
      [now, notice.scope, notice.period, notice.threshold, notice.quota],
    );
    return rows.length === 1;
  }

  async unmarkNotice(notice: PendingNotice): Promise<void> {
    await this.#query(
      "UPDATE quota_notices SET sent_at = NULL WHERE scope = $1 AND period = $2 AND threshold = $3 AND quota = $4",
      [notice.scope, notice.period, notice.threshold, notice.quota],
    );
  }

  async changesSince(revision: number): Promise<{ revision: number; grants: KeyGrant[] }> {
    return this.#withClient((client) => postgresGrantsSince(client, revision));
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }

  /** A change to keys or accounts: the next revision, the work, and the announcement, in one transaction. */
  #change<T>(work: (query: Query, revision: number) => Promise<T>): Promise<T> {
    return this.#transaction(async (query) => {
      const [bumped] = await query<{ value: number }>(
        "UPDATE revision SET value = value + 1 WHERE id = 1 RETURNING value",
      );
      const revision = (bumped as { value: number }).value;
      const result = await work(query, revision);
      await query("SELECT pg_notify($1, $2)", [GRANTS_CHANNEL, String(revision)]);
      return result;
    });
  }

  #transaction<T>(work: (query: Query) => Promise<T>): Promise<T> {
    return this.#withClient(async (client) => {
      await client.query("BEGIN");
      try {
        const result = await work(async (sql, values) => (await client.query(sql, values)).rows);
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      }
    });
  }

  async #query<R extends pg.QueryResultRow>(sql: string, values?: unknown[]): Promise<R[]> {
    try {
      return (await this.#pool.query<R>(sql, values)).rows;
    } catch (error) {
      throw unavailableOr(error);
    }
  }

  async #withClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await takeClient(this.#pool);
    } catch (error) {
      throw unavailableOr(error);
    }
    let failure: unknown;
    try {
      return await work(client);
    } catch (error) {
      failure = error;
      throw unavailableOr(error);
    } finally {
      // A connection that failed is destroyed rather than given back to the pool.
      client.release(isUnavailable(failure) ? (failure as Error) : undefined);
    }
  }
}

/** STORE_UNAVAILABLE (503, Retry-After) for a server that cannot be reached; any other error as it is. */
function unavailableOr(error: unknown): unknown {
  if (error instanceof GatewayError || !isUnavailable(error)) return error;
  return new GatewayError("STORE_UNAVAILABLE", undefined, { "retry-after": "5" });
}
