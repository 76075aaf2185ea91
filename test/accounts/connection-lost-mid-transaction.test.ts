import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresAccountStore } from "../../src/control/accounts/postgres-store.js";
import { PostgresUsageSink } from "../../src/keys/postgres-grants.js";
import { eventually } from "../support/eventually.js";
import { freshPostgresDatabase, needServices } from "../support/services.js";

// A PostgreSQL connection that ends while a transaction holds it (the server restarted or shut down, an
// operator ended the backend) must fail that transaction, not the process: pg emits the loss as the
// client's `error` event, which nothing heard on a client taken from the pool, and a proxy flushing its
// usage when PostgreSQL restarted exited. The backend is made to wait on a lock, then ended, as a
// shutdown ends it (57P01); an `error` event with no listener fails this run as an unhandled error.

const services = await needServices("postgres");

describe.skipIf(services.skip)("a PostgreSQL connection lost in the middle of a transaction", () => {
  let db: Awaited<ReturnType<typeof freshPostgresDatabase>>;
  let store: PostgresAccountStore;
  let sink: PostgresUsageSink;
  let locker: pg.Client;

  beforeAll(async () => {
    db = await freshPostgresDatabase();
    store = await PostgresAccountStore.open(db.url);
    sink = new PostgresUsageSink(db.url);
    locker = new pg.Client({ connectionString: db.url });
    locker.on("error", () => {});
    await locker.connect();
  });
  afterAll(async () => {
    await locker?.end().catch(() => {});
    await sink?.close();
    await store?.close();
    await db?.drop();
  });

  /** Runs `write` while `table` is locked, ends the backend that waits on the lock, and returns the write's error. */
  const lostDuring = async (table: string, write: () => Promise<unknown>): Promise<unknown> => {
    await locker.query("BEGIN");
    await locker.query(`LOCK TABLE ${table} IN EXCLUSIVE MODE`);
    const failed = write().then(
      () => undefined,
      (error: unknown) => error ?? new Error("rejected with nothing"),
    );
    let waiting: number | undefined;
    await eventually(
      async () => {
        // within the lock's transaction, the statistics views are a snapshot taken at their first read
        await locker.query("SELECT pg_stat_clear_snapshot()");
        const { rows } = await locker.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        );
        waiting = rows[0]?.pid;
        return waiting !== undefined;
      },
      5_000,
      "the write waiting on the lock",
    );
    await locker.query("SELECT pg_terminate_backend($1)", [waiting]);
    await locker.query("ROLLBACK");
    return failed;
  };

  it("fails a proxy's usage flush, and the next flush is added", async () => {
    const batch = {
      rows: [{ key: "lostconn", day: "2026-11-29", label: "eth", calls: 1, errors: 0, units: 10 }],
    };
    const error = await lostDuring("usage_flushes", () =>
      sink.add({ id: "lost-1", methods: [], codes: [], ...batch }),
    );
    expect(error).toBeInstanceOf(Error);
    await sink.add({ id: "lost-2", methods: [], codes: [], ...batch });
    const { rows } = await locker.query<{ units: string }>(
      "SELECT units FROM usage WHERE key_prefix = 'lostconn'",
    );
    expect(rows.map((r) => Number(r.units))).toEqual([10]);
  });

  it("fails a control plane's change with STORE_UNAVAILABLE, and the next change is made", async () => {
    const error = await lostDuring("revision", () =>
      store.createAccount("lost@example.com", "active", Date.now()),
    );
    expect((error as { code?: string }).code).toBe("STORE_UNAVAILABLE");
    const account = await store.createAccount("lost@example.com", "active", Date.now());
    expect(account.email).toBe("lost@example.com");
  });
});
