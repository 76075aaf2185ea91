import pg from "pg";

// BIGINT columns (times in ms, revisions, counts) as numbers: every one of them stays far below 2^53.
const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === pg.types.builtins.INT8
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** A pool on the store's database, with bounded waits so an unreachable server fails a call, not hangs it. */
export function openPool(url: string, max: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    types,
    connectionTimeoutMillis: 2_000,
    idleTimeoutMillis: 30_000,
    query_timeout: 10_000,
    keepAlive: true,
    application_name: "node-gateway",
  });
  // An idle client that loses its server emits here; without a listener the process would exit.
  pool.on("error", () => {});
  return pool;
}

/**
 * A client taken from `pool` for more than one query (a transaction, the migrations). pg-pool takes its
 * own error listener off a client it hands out, and pg emits the loss of the connection ("Connection
 * terminated unexpectedly", a server's FATAL shutdown notice between two queries) as the client's `error`
 * event even when the query under way fails with it too: with no listener, that event ends the process
 * (a proxy flushing its usage when PostgreSQL restarted). This one listens until the client is released;
 * the query under way fails on its own, and the pool drops a client that lost its connection.
 * The listener goes on in pg-pool's callback, not after an `await`: a new connection is handed out from
 * within the read of its server's ReadyForQuery, and a FATAL that came in the same read (a backend
 * terminated as it started) is emitted before any promise continuation runs.
 */
export function takeClient(pool: pg.Pool): Promise<pg.PoolClient> {
  return new Promise((resolve, reject) => {
    pool.connect((error, client, release) => {
      if (error || client === undefined) {
        reject(error ?? new Error("the pool handed out no client"));
        return;
      }
      const ignore = () => {};
      client.on("error", ignore);
      // pg-pool sets `release` afresh at every checkout: this one lasts for this checkout only
      client.release = (error?: Error | boolean) => {
        client.off("error", ignore);
        release(error);
      };
      resolve(client);
    });
  });
}

/**
 * One connection outside any pool: the proxy's listening connection, which also carries its reads of what
 * changed, and a read made while that connection is down. `queryTimeoutMs` bounds each query's wait; a
 * notification is no query, so the timeout never ends a connection that is only listening (the heartbeat
 * in keys/postgres-grants.ts watches that one).
 */
export function openClient(url: string, queryTimeoutMs: number): pg.Client {
  return new pg.Client({
    connectionString: url,
    types,
    connectionTimeoutMillis: 2_000,
    query_timeout: queryTimeoutMs,
    keepAlive: true,
    application_name: "node-gateway",
  });
}

/**
 * Whether an error means the server cannot be reached or is going away (connection refused or reset, a
 * timeout, SQLSTATE class 08 connection exception or 57P0x shutdown), as opposed to a query's own error.
 * A query that timed out counts: pg leaves it under way on its connection, which no other query can use.
 */
export function isUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === "string") {
    if (code.startsWith("08") || code.startsWith("57P")) return true;
    if (/^E[A-Z]+$/.test(code)) return true; // ECONNREFUSED, ECONNRESET, ETIMEDOUT, EPIPE…
  }
  const message = error instanceof Error ? error.message : "";
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended|Query read timeout/i.test(
    message,
  );
}

/** The channel every change to a key or an account is announced on; its payload is the new revision. */
export const GRANTS_CHANNEL = "gateway_grants";
