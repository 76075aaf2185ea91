import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { migratePostgres } from "../../src/control/accounts/postgres-migrations.js";
import { migrate } from "../../src/store/sqlite-migrations.js";
import { freshPostgresDatabase } from "../support/services.js";
import { keyIn, type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";
import { type AccountsFixture, STORES, startAccounts } from "./helpers.js";

// The keys the control plane draws next, before the random ones: two keys with one prefix, on demand.
const drawn = vi.hoisted(() => ({ next: [] as string[] }));
vi.mock("../../src/keys/issue.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../src/keys/issue.js")>();
  return { newApiKey: () => drawn.next.shift() ?? original.newApiKey() };
});

const TAIL = "0123456789abcdefghijklmn"; // a key: FN and 32 characters

describe.each(STORES)("a key prefix (%s store)", (store) => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({}, smtp.port, store);
  });
  afterAll(async () => {
    await fx?.close();
    await smtp?.close();
  });

  it("is one key's: a new key whose prefix another key has is drawn again", async () => {
    const email = `prefix-${store}@example.com`;
    const signup = smtp.next(email);
    expect((await fx.api("POST", "/v1/signup", { email })).status).toBe(202);
    const session = (await fx.api("POST", "/v1/confirm", { token: tokenIn(await signup) })).json.session;
    // the second key drawn has the first's prefix (FNclash001); the third does not
    drawn.next.push(`FNclash001${TAIL}`, `FNclash001${TAIL.toUpperCase()}`, `FNother002${TAIL}`);
    const keys: string[] = [];
    for (let i = 0; i < 2; i++) {
      const mail = smtp.next(email);
      expect((await fx.api("POST", "/v1/orders", { network: "eth" }, session)).status).toBe(201);
      keys.push(keyIn(await mail));
    }
    expect(keys).toEqual([`FNclash001${TAIL}`, `FNother002${TAIL}`]);
    const listed = await fx.api("GET", "/v1/keys", undefined, session);
    expect(listed.json.keys.map((k: { prefix: string }) => k.prefix)).toEqual(["FNclash001", "FNother002"]);
    expect(drawn.next).toEqual([]);
  });
});

/** What migration 7 meets in a store that already has two keys with one prefix, in either dialect. */
const CLASHING_KEYS = `
  INSERT INTO accounts (id, email, status, created_at, revision) VALUES (1, 'a@example.com', 'active', 0, 1);
  INSERT INTO accounts (id, email, status, created_at, revision) VALUES (2, 'b@example.com', 'active', 0, 1);
  INSERT INTO api_keys (id, account_id, key_hash, prefix, plan, networks, archive, status, created_at,
    revision, quota_prefix, replaced_by) VALUES
    (10, 1, 'h10', 'FNsame0001', 'shared', '["eth"]', 1, 'active', 0, 1, NULL, NULL),
    (14, 1, 'h14', 'FNnext0014', 'shared', '["eth"]', 1, 'active', 0, 1, 'FNsame0001', NULL),
    (13, 2, 'h13', 'FNnext0013', 'shared', '["eth"]', 1, 'active', 0, 1, 'FNsame0001', NULL),
    (12, 2, 'h12', 'FNnext0012', 'shared', '["eth"]', 1, 'active', 0, 1, 'FNsame0001', 13),
    (11, 2, 'h11', 'FNsame0001', 'shared', '["eth"]', 1, 'active', 0, 1, NULL, 12);
  UPDATE api_keys SET replaced_by = 14 WHERE id = 10;
  UPDATE revision SET value = 1;`;

/** The store as it was before migration 7: what 7 and the migrations after it made undone. */
const BEFORE_MIGRATION_7 =
  "DROP TABLE usage_flushes; DROP INDEX api_keys_prefix; DELETE FROM schema_migrations WHERE version >= 7;";

/** Each key's prefix and quota prefix, by id, after migrating. */
const KEYS_AFTER = "SELECT id, prefix, quota_prefix, revision FROM api_keys ORDER BY id";
const EXPECTED = [
  { id: 10, prefix: "FNsame0001", quota_prefix: null, revision: 1 },
  { id: 11, prefix: "FNsame0001-11", quota_prefix: null, revision: 2 },
  { id: 12, prefix: "FNnext0012", quota_prefix: "FNsame0001-11", revision: 2 },
  { id: 13, prefix: "FNnext0013", quota_prefix: "FNsame0001-11", revision: 2 },
  { id: 14, prefix: "FNnext0014", quota_prefix: "FNsame0001", revision: 1 },
];

describe("the migration that makes key prefixes unique", () => {
  it("gives the later of two keys with one prefix its own, and its rotation line too (SQLite)", () => {
    const db = new Database(":memory:");
    try {
      migrate(db);
      // the store as it was before migration 7, with two keys of one prefix
      db.exec(BEFORE_MIGRATION_7);
      db.exec(CLASHING_KEYS);
      migrate(db);
      expect(db.prepare(KEYS_AFTER).all()).toEqual(EXPECTED);
      expect(() =>
        db.exec(`INSERT INTO api_keys (account_id, key_hash, prefix, plan, networks, archive, status,
          created_at, revision) VALUES (1, 'h', 'FNsame0001', 'shared', '"*"', 1, 'active', 0, 3)`),
      ).toThrow("UNIQUE constraint failed: api_keys.prefix");
    } finally {
      db.close();
    }
  });

  it.skipIf(!STORES.includes("postgres"))(
    "gives the later of two keys with one prefix its own, and its rotation line too (PostgreSQL)",
    async () => {
      const database = await freshPostgresDatabase();
      const client = new pg.Client(database.url);
      try {
        await client.connect();
        await migratePostgres(client);
        await client.query(BEFORE_MIGRATION_7);
        await client.query(CLASHING_KEYS);
        await migratePostgres(client);
        const { rows } = await client.query(KEYS_AFTER);
        expect(rows.map((r) => ({ ...r, revision: Number(r.revision) }))).toEqual(EXPECTED);
        await expect(
          client.query(`INSERT INTO api_keys (account_id, key_hash, prefix, plan, networks, archive, status,
            created_at, revision) VALUES (1, 'h', 'FNsame0001', 'shared', '"*"', 1, 'active', 0, 3)`),
        ).rejects.toThrow("api_keys_prefix");
      } finally {
        await client.end();
        await database.drop();
      }
    },
  );
});
