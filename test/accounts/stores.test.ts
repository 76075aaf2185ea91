import Database from "better-sqlite3";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { migratePostgres } from "../../src/control/accounts/postgres-migrations.js";
import { PostgresAccountStore } from "../../src/control/accounts/postgres-store.js";
import { UsageCounter, type UsageRow } from "../../src/keys/usage.js";
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
  it("keeps them, merges them with what was counted since, and writes them with the next flush", async () => {
    const written: UsageRow[][] = [];
    let refuse = true;
    const sink = {
      add: async (rows: readonly UsageRow[]) => {
        if (refuse) throw new Error("connection refused");
        written.push([...rows]);
      },
      addDetail: async () => {},
      close: async () => {},
    };
    const counter = new UsageCounter(sink, 3_600_000);
    counter.record("FNkey1", "eth", 2, 1, 40);
    await expect(counter.flush()).rejects.toThrow("connection refused");
    counter.record("FNkey1", "eth", 3, 0, 60);
    counter.record("FNkey2", "dot", 1, 0, 20);
    refuse = false;
    await counter.flush();
    expect(written).toHaveLength(1);
    expect(
      written[0]?.map(({ key, label, calls, errors, units }) => ({ key, label, calls, errors, units })),
    ).toEqual([
      { key: "FNkey1", label: "eth", calls: 5, errors: 1, units: 100 },
      { key: "FNkey2", label: "dot", calls: 1, errors: 0, units: 20 },
    ]);
    await counter.close();
    expect(written).toHaveLength(1); // nothing new: nothing written
  });
});
