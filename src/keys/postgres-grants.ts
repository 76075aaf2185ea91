import type pg from "pg";
import type { QuotaSpentSource } from "../plans/quota-ledger.js";
import type { NoticeSink, QuotaNotice } from "../plans/quota-notices.js";
import { GRANTS_CHANNEL, isUnavailable, openClient, openPool, takeClient } from "../store/postgres.js";
import { type GrantRow, grantOf, grantsChangedAfter } from "./grant-rows.js";
import type { GrantFeed, GrantStatus, KeyGrant } from "./grants.js";
import { spentQuery } from "./quota-spent.js";
import { reconnectDelay } from "./reconnect-backoff.js";
import { FLUSH_IDS_KEPT_MS, type UsageBatch, type UsageSink } from "./usage.js";
import { LATENCY_BOUNDS_MS, LATENCY_COLUMNS } from "./usage-detail.js";

const GRANTS_AFTER = grantsChangedAfter("$1");

/**
 * The grants of a PostgreSQL account store that changed after `revision`; also the control plane's. One
 * REPEATABLE READ snapshot for the revision and the rows, so a reader never records a revision whose rows
 * it has not seen. Writers bump the revision row inside their transaction, so revisions commit in order.
 * When the read fails, a connection that still answers ends its transaction; one that failed (isUnavailable)
 * is left as it is, for the caller to drop: another query on it would only wait behind the one that failed.
 */
export async function postgresGrantsSince(
  client: pg.ClientBase,
  revision: number,
): Promise<{ revision: number; grants: KeyGrant[] }> {
  await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  let changes: { revision: number; grants: KeyGrant[] };
  try {
    const current = (await client.query<{ value: number }>("SELECT value FROM revision WHERE id = 1")).rows[0]
      ?.value;
    if (current === undefined) throw new Error("the store has no revision row: is it migrated?");
    if (current === revision) changes = { revision, grants: [] };
    else {
      const { rows } = await client.query<GrantRow>(GRANTS_AFTER, [revision]);
      changes = { revision: current, grants: rows.map(grantOf) };
    }
  } catch (error) {
    if (!isUnavailable(error)) await client.query("ROLLBACK").catch(() => {});
    throw error;
  }
  await client.query("COMMIT");
  return changes;
}

/**
 * The listening connection's heartbeat: every HEARTBEAT_INTERVAL_MS it runs `SELECT 1`, and an answer later
 * than HEARTBEAT_TIMEOUT_MS counts as the connection lost. A database host that dies or a network that
 * splits closes nothing on the proxy's side, and notifications never say that none are coming: without it,
 * a proxy would keep a revoked key working until the operating system gave up on the socket (TCP keepalive's
 * default is two hours, and its probes are answered by anything on the path that holds the socket, such as
 * a balancer). So a proxy that has gone deaf knows it within 3 s. A read under way on the connection stands
 * for the heartbeat, which would only wait behind it: the read's own timeout (READ_TIMEOUT_MS) watches it.
 */
export const HEARTBEAT_INTERVAL_MS = 2_000;
export const HEARTBEAT_TIMEOUT_MS = 1_000;
/** How long the server may take to answer LISTEN once connected. */
const LISTEN_TIMEOUT_MS = 2_000;
/** How long one query of a read of what changed may take: a read after a long outage may be a large one. */
const READ_TIMEOUT_MS = 10_000;

/** The connection that listens, once it does. */
interface Listening {
  readonly client: pg.Client;
  /** Reads under way on it. */
  reads: number;
  heartbeat: NodeJS.Timeout | undefined;
  /** Drops it and connects again with the backoff, as when the connection reports its own end. */
  lose(error: Error): void;
}

/** Rejects with "`what` got no answer within `ms` ms" when `promise` takes longer. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} got no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * The proxy's reader of a PostgreSQL account store. It LISTENs on the store's channel: every committed change
 * to a key or an account notifies it, and it reads what changed, so a revocation reaches every proxy within
 * milliseconds without any polling. The reads go over the listening connection itself, whose heartbeat
 * proves it alive: a read never waits on a pooled connection that died unnoticed. When the listening
 * connection drops, or misses a heartbeat, or a read on it times out, it says so and tries again every
 * 250 ms at most (reconnect-backoff.ts); once back, it reads everything that changed meanwhile at once, since
 * a notification sent while it was away is not kept for it. So a change made after the store returns reaches
 * it within about a quarter second. A read asked for while no connection listens (the first, before `watch`,
 * or one during an outage) opens a connection of its own for it.
 */
export class PostgresGrantFeed implements GrantFeed {
  readonly #url: string;
  #listening: Listening | undefined;
  #closed = false;
  #retry: NodeJS.Timeout | undefined;

  constructor(url: string) {
    this.#url = url;
  }

  async changesSince(revision: number): Promise<{ revision: number; grants: KeyGrant[] }> {
    const listening = this.#listening;
    if (listening === undefined) return this.#readAlone(revision);
    listening.reads += 1;
    try {
      return await postgresGrantsSince(listening.client, revision);
    } catch (error) {
      // A read that timed out or lost its server leaves the connection unusable: start it again.
      if (isUnavailable(error)) listening.lose(error as Error);
      throw error;
    } finally {
      listening.reads -= 1;
    }
  }

  async #readAlone(revision: number): Promise<{ revision: number; grants: KeyGrant[] }> {
    const client = openClient(this.#url, READ_TIMEOUT_MS);
    // a server that goes away during the read fails the read; without a listener it would end the process
    client.on("error", () => {});
    try {
      await client.connect();
      return await postgresGrantsSince(client, revision);
    } finally {
      // with a query still under way (one that timed out), end() destroys the socket rather than wait
      await client.end().catch(() => {});
    }
  }

  watch(listener: () => void, status: (change: GrantStatus) => void = () => {}): () => void {
    // retries since the connection was last good
    let attempt = 0;
    const connect = async () => {
      if (this.#closed) return;
      const client = openClient(this.#url, READ_TIMEOUT_MS);
      let lost = false;
      const onLost = (error?: Error) => {
        if (lost || this.#closed) return;
        lost = true;
        clearTimeout(listening.heartbeat);
        if (this.#listening === listening) this.#listening = undefined;
        // With a query under way (the heartbeat or a read the server never answered), this destroys the
        // socket: a silent server would never answer a polite goodbye either.
        client.end().catch(() => {});
        status({ reachable: false, reason: error?.message ?? "the listening connection ended" });
        this.#retry = setTimeout(connect, reconnectDelay(attempt));
        attempt += 1;
      };
      const listening: Listening = { client, reads: 0, heartbeat: undefined, lose: onLost };
      client.on("error", onLost);
      client.on("end", () => onLost());
      client.on("notification", () => listener());
      try {
        await client.connect();
        await within(client.query(`LISTEN ${GRANTS_CHANNEL}`), LISTEN_TIMEOUT_MS, "LISTEN");
      } catch (error) {
        onLost(error as Error);
        return;
      }
      if (this.#closed) {
        await client.end().catch(() => {});
        return;
      }
      if (lost) return;
      this.#listening = listening;
      attempt = 0;
      const beat = () => {
        listening.heartbeat = setTimeout(async () => {
          if (listening.reads === 0) {
            try {
              await within(
                client.query("SELECT 1"),
                HEARTBEAT_TIMEOUT_MS,
                "the listening connection's heartbeat",
              );
            } catch (error) {
              onLost(error as Error);
              return;
            }
          }
          if (!lost && !this.#closed) beat();
        }, HEARTBEAT_INTERVAL_MS);
      };
      beat();
      status({ reachable: true });
      // What changed while no one listened.
      listener();
    };
    void connect();
    return () => this.#stop();
  }

  #stop(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    const listening = this.#listening;
    this.#listening = undefined;
    if (listening === undefined) return Promise.resolve();
    clearTimeout(listening.heartbeat);
    return listening.client.end().catch(() => {});
  }

  async close(): Promise<void> {
    await this.#stop();
  }
}

const ADD_USAGE = `INSERT INTO usage (key_prefix, day, label, calls, errors, units)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[])
  ON CONFLICT (key_prefix, day, label)
  DO UPDATE SET calls = usage.calls + excluded.calls, errors = usage.errors + excluded.errors,
    units = usage.units + excluded.units`;
const ADD_METHODS = `INSERT INTO usage_methods (key_prefix, day, label, method, calls, units, errors, ms_sum, ${LATENCY_COLUMNS.join(", ")})
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[],
    $7::bigint[], $8::bigint[], ${LATENCY_COLUMNS.map((_, i) => `$${i + 9}::bigint[]`).join(", ")})
  ON CONFLICT (key_prefix, day, label, method) DO UPDATE SET calls = usage_methods.calls + excluded.calls,
    units = usage_methods.units + excluded.units, errors = usage_methods.errors + excluded.errors,
    ms_sum = usage_methods.ms_sum + excluded.ms_sum, ${LATENCY_COLUMNS.map((c) => `${c} = usage_methods.${c} + excluded.${c}`).join(", ")}`;
const ADD_CODES = `INSERT INTO usage_codes (key_prefix, day, label, code, count)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[])
  ON CONFLICT (key_prefix, day, label, code) DO UPDATE SET count = usage_codes.count + excluded.count`;
// Rows another proxy is deleting are skipped, not waited for: it deletes them, and no two flushes deadlock.
const PRUNE_FLUSHES = `DELETE FROM usage_flushes WHERE id IN
  (SELECT id FROM usage_flushes WHERE flushed_at < $1 FOR UPDATE SKIP LOCKED)`;

/** Usage counts added to a PostgreSQL store: one transaction per flush, whatever the number of rows. */
export class PostgresUsageSink implements UsageSink, NoticeSink, QuotaSpentSource {
  readonly #pool: pg.Pool;

  constructor(url: string) {
    this.#pool = openPool(url, 1);
  }

  async spent(scope: string, day: string): Promise<{ day: number; month: number }> {
    const names: string[] = [];
    const query = spentQuery(scope, day, (name) => {
      if (!names.includes(name)) names.push(name);
      return `$${names.indexOf(name) + 1}`;
    });
    const { rows } = await this.#pool.query<{ day_units: string; month_units: string }>(
      query.sql,
      names.map((name) => query.values[name]),
    );
    return { day: Number(rows[0]?.day_units ?? 0), month: Number(rows[0]?.month_units ?? 0) };
  }

  /**
   * The batch's id first: a batch sent again while its first write still runs on the server (its client
   * timed out, the server did not) waits on that id's row, then adds nothing if the first committed.
   */
  async add(batch: UsageBatch): Promise<void> {
    const client = await takeClient(this.#pool);
    try {
      const now = Date.now();
      await client.query("BEGIN");
      const recorded = await client.query(
        "INSERT INTO usage_flushes (id, flushed_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        [batch.id, now],
      );
      if (recorded.rowCount === 1) {
        const { rows, methods, codes } = batch;
        if (rows.length > 0)
          await client.query(ADD_USAGE, [
            rows.map((r) => r.key),
            rows.map((r) => r.day),
            rows.map((r) => r.label),
            rows.map((r) => r.calls),
            rows.map((r) => r.errors),
            rows.map((r) => r.units),
          ]);
        if (methods.length > 0)
          await client.query(ADD_METHODS, [
            methods.map((r) => r.key),
            methods.map((r) => r.day),
            methods.map((r) => r.label),
            methods.map((r) => r.method),
            methods.map((r) => r.calls),
            methods.map((r) => r.units),
            methods.map((r) => r.errors),
            methods.map((r) => r.msSum),
            ...LATENCY_BOUNDS_MS.map((_, bucket) => methods.map((r) => r.latency[bucket] ?? 0)),
          ]);
        if (codes.length > 0)
          await client.query(ADD_CODES, [
            codes.map((r) => r.key),
            codes.map((r) => r.day),
            codes.map((r) => r.label),
            codes.map((r) => r.code),
            codes.map((r) => r.count),
          ]);
        await client.query(PRUNE_FLUSHES, [now - FLUSH_IDS_KEPT_MS]);
      }
      await client.query("COMMIT");
    } catch (error) {
      // The connection goes, and its transaction with it (a query that timed out holds it anyway): the
      // batch is sent again on another, under the same id.
      client.release(error as Error);
      throw error;
    }
    client.release();
  }

  async notice(n: QuotaNotice): Promise<void> {
    await this.#pool.query(
      `INSERT INTO quota_notices (scope, period, threshold, account_id, key_prefix, plan, quota, resets_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
      [n.scope, n.period, n.threshold, n.accountId, n.keyPrefix, n.plan, n.quota, n.resetsAt, Date.now()],
    );
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}
