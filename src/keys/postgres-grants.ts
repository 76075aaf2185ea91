import type pg from "pg";
import { GRANTS_CHANNEL, openClient, openPool } from "../store/postgres.js";
import type { GrantFeed, GrantStatus, KeyGrant } from "./grants.js";
import { reconnectDelay } from "./reconnect-backoff.js";
import { GRANTS_CHANGED, type GrantRow, grantOf } from "./sqlite-grants.js";
import type { UsageRow, UsageSink } from "./usage.js";

/**
 * The grants of a PostgreSQL account store that changed after `revision`; also the control plane's. One
 * REPEATABLE READ snapshot for the revision and the rows, so a reader never records a revision whose rows
 * it has not seen. Writers bump the revision row inside their transaction, so revisions commit in order.
 */
export async function postgresGrantsSince(
  client: pg.ClientBase,
  revision: number,
): Promise<{ revision: number; grants: KeyGrant[] }> {
  await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  try {
    const current = (await client.query<{ value: number }>("SELECT value FROM revision WHERE id = 1")).rows[0]
      ?.value;
    if (current === undefined) throw new Error("the store has no revision row: is it migrated?");
    if (current === revision) return { revision, grants: [] };
    const { rows } = await client.query<GrantRow>(GRANTS_CHANGED.replace("?", "$1"), [revision]);
    return { revision: current, grants: rows.map(grantOf) };
  } finally {
    await client.query("COMMIT");
  }
}

/**
 * The proxy's reader of a PostgreSQL account store. It LISTENs on the store's channel: every committed change
 * to a key or an account notifies it, and it reads what changed, so a revocation reaches every proxy within
 * milliseconds without any polling. When the listening connection drops, it says so and tries again every
 * 250 ms at most (reconnect-backoff.ts); once back, it reads everything that changed meanwhile at once, since
 * a notification sent while it was away is not kept for it. So a change made after the store returns reaches
 * it within about a quarter second.
 */
export class PostgresGrantFeed implements GrantFeed {
  readonly #url: string;
  readonly #pool: pg.Pool;
  #listening: pg.Client | undefined;
  #closed = false;
  #retry: NodeJS.Timeout | undefined;

  constructor(url: string) {
    this.#url = url;
    this.#pool = openPool(url, 2);
  }

  async changesSince(revision: number): Promise<{ revision: number; grants: KeyGrant[] }> {
    const client = await this.#pool.connect();
    try {
      return await postgresGrantsSince(client, revision);
    } finally {
      client.release();
    }
  }

  watch(listener: () => void, status: (change: GrantStatus) => void = () => {}): () => void {
    // retries since the connection was last good
    let attempt = 0;
    const connect = async () => {
      if (this.#closed) return;
      const client = openClient(this.#url);
      let lost = false;
      const onLost = (error?: Error) => {
        if (lost || this.#closed) return;
        lost = true;
        this.#listening = undefined;
        client.end().catch(() => {});
        status({ reachable: false, reason: error?.message ?? "the listening connection ended" });
        this.#retry = setTimeout(connect, reconnectDelay(attempt));
        attempt += 1;
      };
      client.on("error", onLost);
      client.on("end", () => onLost());
      client.on("notification", () => listener());
      try {
        await client.connect();
        await client.query(`LISTEN ${GRANTS_CHANNEL}`);
      } catch (error) {
        onLost(error as Error);
        return;
      }
      if (this.#closed) {
        await client.end().catch(() => {});
        return;
      }
      this.#listening = client;
      attempt = 0;
      status({ reachable: true });
      // What changed while no one listened.
      listener();
    };
    void connect();
    return () => {
      clearTimeout(this.#retry);
      this.#closed = true;
      this.#listening?.end().catch(() => {});
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    await this.#listening?.end().catch(() => {});
    await this.#pool.end();
  }
}

/** Usage counts added to a PostgreSQL store: one statement per flush, whatever the number of rows. */
export class PostgresUsageSink implements UsageSink {
  readonly #pool: pg.Pool;

  constructor(url: string) {
    this.#pool = openPool(url, 1);
  }

  async add(rows: readonly UsageRow[]): Promise<void> {
    await this.#pool.query(
      `INSERT INTO usage (key_prefix, day, label, calls, errors)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[])
       ON CONFLICT (key_prefix, day, label)
       DO UPDATE SET calls = usage.calls + excluded.calls, errors = usage.errors + excluded.errors`,
      [
        rows.map((r) => r.key),
        rows.map((r) => r.day),
        rows.map((r) => r.label),
        rows.map((r) => r.calls),
        rows.map((r) => r.errors),
      ],
    );
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}
