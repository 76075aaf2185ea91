import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { migratePostgres } from "../../src/control/accounts/postgres-migrations.js";
import { PostgresAccountStore } from "../../src/control/accounts/postgres-store.js";
import { PostgresUsageSink } from "../../src/keys/postgres-grants.js";
import { SqliteUsageSink } from "../../src/keys/sqlite-grants.js";
import { type UsageBatch, UsageCounter } from "../../src/keys/usage.js";
import { LATENCY_BOUNDS_MS } from "../../src/keys/usage-detail.js";
import { migrate } from "../../src/store/sqlite-migrations.js";
import { freshPostgresDatabase, needServices } from "../support/services.js";

const postgres = await needServices("postgres");

describe.skipIf(postgres.skip)("the two stores' schemas", () => {
  it("have the same versions, tables and columns; PostgreSQL's migrations run once, however often opened", async () => {
    const sqlite = new Database(":memory:");
    const versions = migrate(sqlite);
    const tables = (
      sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as {
        name: string;
      }[]
    ).map((t) => t.name);
    const sqliteColumns = Object.fromEntries(
      tables.map((t) => [
        t,
        (sqlite.prepare(`PRAGMA table_info(${t})`).all() as { name: string }[]).map((c) => c.name).sort(),
      ]),
    );
    sqlite.close();

    const db = await freshPostgresDatabase();
    const client = new pg.Client(db.url);
    try {
      // two control planes starting at once: the advisory lock lets one migrate
      const [a, b] = await Promise.all([
        PostgresAccountStore.open(db.url),
        PostgresAccountStore.open(db.url),
      ]);
      await Promise.all([a.close(), b.close()]);
      await client.connect();
      expect(await migratePostgres(client)).toBe(versions);
      const applied = await client.query("SELECT version FROM schema_migrations ORDER BY version");
      expect(applied.rows.map((r) => r.version)).toEqual(Array.from({ length: versions }, (_, i) => i + 1));
      const { rows } = await client.query<{ table_name: string; column_name: string }>(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'",
      );
      const postgresColumns: Record<string, string[]> = {};
      for (const row of rows)
        postgresColumns[row.table_name] = [...(postgresColumns[row.table_name] ?? []), row.column_name];
      for (const columns of Object.values(postgresColumns)) columns.sort();
      expect(postgresColumns).toEqual(sqliteColumns);
    } finally {
      await client.end();
      await db.drop();
    }
  });
});

describe("usage counts when the store refuses a flush", () => {
  it("sends the refused batch again as it was, under its id, and what was counted since in the batch after it", async () => {
    const tried: string[] = [];
    const written: UsageBatch[] = [];
    let refuse = true;
    const sink = {
      add: async (batch: UsageBatch) => {
        tried.push(batch.id);
        // a refusal or a timeout alike: the store may have added the batch, so it goes again unchanged
        if (refuse) throw new Error("Query read timeout");
        written.push(batch);
      },
      close: async () => {},
    };
    const counter = new UsageCounter(sink, 3_600_000);
    counter.record("FNkey1", "eth", 2, 1, 40);
    await expect(counter.flush()).rejects.toThrow("Query read timeout");
    counter.record("FNkey1", "eth", 3, 0, 60);
    counter.record("FNkey2", "dot", 1, 0, 20);
    await expect(counter.flush()).rejects.toThrow("Query read timeout");
    refuse = false;
    await counter.flush();
    const counts = (batch: UsageBatch | undefined) =>
      batch?.rows.map(({ key, label, calls, errors, units }) => ({ key, label, calls, errors, units }));
    expect({ tried: tried.length, written: written.length }).toEqual({ tried: 4, written: 2 });
    expect(new Set(tried.slice(0, 3)).size).toBe(1);
    expect(written[0]?.id).toBe(tried[0]);
    expect(written[1]?.id).not.toBe(tried[0]);
    expect(counts(written[0])).toEqual([{ key: "FNkey1", label: "eth", calls: 2, errors: 1, units: 40 }]);
    expect(counts(written[1])).toEqual([
      { key: "FNkey1", label: "eth", calls: 3, errors: 0, units: 60 },
      { key: "FNkey2", label: "dot", calls: 1, errors: 0, units: 20 },
    ]);
    await counter.close();
    expect(written).toHaveLength(2); // nothing new: nothing written
  });
});

describe("a usage batch the store is sent twice", () => {
  const batch: UsageBatch = {
    id: "FNbatch1:1",
    rows: [{ key: "FNkey1", day: "2026-11-29", label: "eth", calls: 3, errors: 1, units: 30 }],
    methods: [
      {
        key: "FNkey1",
        day: "2026-11-29",
        label: "eth",
        method: "eth_call",
        calls: 3,
        units: 30,
        errors: 1,
        msSum: 12,
        latency: LATENCY_BOUNDS_MS.map((_, bucket) => (bucket === 0 ? 3 : 0)),
      },
    ],
    codes: [{ key: "FNkey1", day: "2026-11-29", label: "eth", code: "-32000", count: 1 }],
  };
  const totals =
    "SELECT (SELECT SUM(units) FROM usage) AS units, (SELECT SUM(calls) FROM usage_methods) AS calls, (SELECT SUM(count) FROM usage_codes) AS codes";

  it("is added once in SQLite", async () => {
    const dir = mkdtempSync(join(tmpdir(), "usage-batch-"));
    const file = join(dir, "store.sqlite");
    try {
      const db = new Database(file);
      migrate(db);
      const sink = new SqliteUsageSink(file);
      await sink.add(batch);
      await sink.add(batch);
      await sink.close();
      expect(db.prepare(totals).get()).toEqual({ units: 30, calls: 3, codes: 1 });
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(postgres.skip)("is added once in PostgreSQL", async () => {
    const db = await freshPostgresDatabase();
    const client = new pg.Client(db.url);
    try {
      await client.connect();
      await migratePostgres(client);
      const sink = new PostgresUsageSink(db.url);
      await sink.add(batch);
      await sink.add(batch);
      await sink.close();
      const { rows } = await client.query(totals);
      expect(rows[0]).toEqual({ units: "30", calls: "3", codes: "1" });
    } finally {
      await client.end();
      await db.drop();
    }
  });
});
