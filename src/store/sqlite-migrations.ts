import type Database from "better-sqlite3";

// The SQLite account store's tables. The control plane applies them when it opens the store; so does a
// proxy on the embedded default's first run, which creates the store (proxy/first-run.ts): here rather
// than under control/, which the proxy's bundle holds nothing of.
// Versioned, append-only: a released migration is never edited, a change is a new entry.
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE accounts (
     id INTEGER PRIMARY KEY,
     email TEXT NOT NULL UNIQUE COLLATE NOCASE,
     status TEXT NOT NULL CHECK (status IN ('pending', 'active', 'suspended', 'closed')),
     created_at INTEGER NOT NULL,
     free_tests_used INTEGER NOT NULL DEFAULT 0,
     revision INTEGER NOT NULL
   );
   CREATE TABLE tokens (
     token_hash TEXT PRIMARY KEY,
     account_id INTEGER NOT NULL REFERENCES accounts (id),
     purpose TEXT NOT NULL CHECK (purpose IN ('confirm', 'login', 'session')),
     expires_at INTEGER NOT NULL,
     used_at INTEGER
   );
   CREATE TABLE api_keys (
     id INTEGER PRIMARY KEY,
     account_id INTEGER NOT NULL REFERENCES accounts (id),
     key_hash TEXT NOT NULL UNIQUE,
     prefix TEXT NOT NULL,
     plan TEXT NOT NULL CHECK (plan IN ('free-test', 'shared', 'dedicated')),
     networks TEXT NOT NULL,
     archive INTEGER NOT NULL,
     rate_per_second REAL,
     rate_burst REAL,
     status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
     created_at INTEGER NOT NULL,
     expires_at INTEGER,
     revoked_at INTEGER,
     replaced_by INTEGER REFERENCES api_keys (id),
     revision INTEGER NOT NULL
   );
   CREATE INDEX api_keys_account ON api_keys (account_id);
   CREATE INDEX api_keys_revision ON api_keys (revision);
   CREATE INDEX accounts_revision ON accounts (revision);
   CREATE TABLE revision (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL);
   INSERT INTO revision (id, value) VALUES (1, 0);`,
  // Calls per key, per label, per UTC day, errors apart: what proxies flush (keys/usage.ts), what an owner
  // reads, and what a daily or monthly quota sums. One row per key, day and label; a key's range of days
  // is one index range.
  `CREATE TABLE usage (
     key_prefix TEXT NOT NULL,
     day TEXT NOT NULL CHECK (length(day) = 10),
     label TEXT NOT NULL,
     calls INTEGER NOT NULL DEFAULT 0,
     errors INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (key_prefix, day, label)
   ) WITHOUT ROWID;`,
  // Plans by name, as the deployment config defines them (docs/plans.md): the plan's CHECK goes, which
  // SQLite drops only by building the table again. With it: each key's security settings (JSON, NULL for
  // none), the compute units each usage row counts, and the quota e-mails sent, one per scope, period and
  // threshold, which the control plane mails. The new table names itself in its REFERENCES, which the rename carries over.
  `CREATE TABLE api_keys_v3 (
     id INTEGER PRIMARY KEY,
     account_id INTEGER NOT NULL REFERENCES accounts (id),
     key_hash TEXT NOT NULL UNIQUE,
     prefix TEXT NOT NULL,
     plan TEXT NOT NULL,
     networks TEXT NOT NULL,
     archive INTEGER NOT NULL,
     rate_per_second REAL,
     rate_burst REAL,
     status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
     created_at INTEGER NOT NULL,
     expires_at INTEGER,
     revoked_at INTEGER,
     replaced_by INTEGER REFERENCES api_keys_v3 (id),
     revision INTEGER NOT NULL,
     settings TEXT
   );
   INSERT INTO api_keys_v3 (id, account_id, key_hash, prefix, plan, networks, archive, rate_per_second,
     rate_burst, status, created_at, expires_at, revoked_at, replaced_by, revision)
   SELECT id, account_id, key_hash, prefix, plan, networks, archive, rate_per_second, rate_burst, status,
     created_at, expires_at, revoked_at, replaced_by, revision FROM api_keys;
   DROP TABLE api_keys;
   ALTER TABLE api_keys_v3 RENAME TO api_keys;
   CREATE INDEX api_keys_account ON api_keys (account_id);
   CREATE INDEX api_keys_revision ON api_keys (revision);
   ALTER TABLE usage ADD COLUMN units INTEGER NOT NULL DEFAULT 0;
   CREATE TABLE quota_notices (
     scope TEXT NOT NULL,
     period TEXT NOT NULL,
     threshold INTEGER NOT NULL,
     account_id INTEGER NOT NULL REFERENCES accounts (id),
     key_prefix TEXT NOT NULL,
     plan TEXT NOT NULL,
     quota INTEGER NOT NULL,
     resets_at INTEGER NOT NULL,
     created_at INTEGER NOT NULL,
     sent_at INTEGER,
     PRIMARY KEY (scope, period, threshold)
   ) WITHOUT ROWID;
   CREATE INDEX quota_notices_unsent ON quota_notices (created_at) WHERE sent_at IS NULL;`,
  // Per key, day, label and method: calls, compute units, errors, and the gateway's time in ten buckets
  // (keys/usage-detail.ts LATENCY_BOUNDS_MS); per key, day, label and error code: how many. What the
  // dashboard's overview shows: the slowest and the dearest methods, errors by code, p50 and p95.
  `CREATE TABLE usage_methods (
     key_prefix TEXT NOT NULL,
     day TEXT NOT NULL,
     label TEXT NOT NULL,
     method TEXT NOT NULL,
     calls INTEGER NOT NULL DEFAULT 0,
     units INTEGER NOT NULL DEFAULT 0,
     errors INTEGER NOT NULL DEFAULT 0,
     ms_sum INTEGER NOT NULL DEFAULT 0,
     lat0 INTEGER NOT NULL DEFAULT 0,
     lat1 INTEGER NOT NULL DEFAULT 0,
     lat2 INTEGER NOT NULL DEFAULT 0,
     lat3 INTEGER NOT NULL DEFAULT 0,
     lat4 INTEGER NOT NULL DEFAULT 0,
     lat5 INTEGER NOT NULL DEFAULT 0,
     lat6 INTEGER NOT NULL DEFAULT 0,
     lat7 INTEGER NOT NULL DEFAULT 0,
     lat8 INTEGER NOT NULL DEFAULT 0,
     lat9 INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (key_prefix, day, label, method)
   ) WITHOUT ROWID;
   CREATE TABLE usage_codes (
     key_prefix TEXT NOT NULL,
     day TEXT NOT NULL,
     label TEXT NOT NULL,
     code TEXT NOT NULL,
     count INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (key_prefix, day, label, code)
   ) WITHOUT ROWID;`,
  // A rotated key spends the quota of the first key of its line: rotation is not a new allowance.
  "ALTER TABLE api_keys ADD COLUMN quota_prefix TEXT",
  // A quota raised within its period is crossed again at 80 % and 100 % of its new size: each size's
  // notices once, not each threshold once a period (a customer was cut off at the raised quota unwarned).
  `CREATE TABLE quota_notices_v2 (
     scope TEXT NOT NULL,
     period TEXT NOT NULL,
     threshold INTEGER NOT NULL,
     account_id INTEGER NOT NULL REFERENCES accounts (id),
     key_prefix TEXT NOT NULL,
     plan TEXT NOT NULL,
     quota INTEGER NOT NULL,
     resets_at INTEGER NOT NULL,
     created_at INTEGER NOT NULL,
     sent_at INTEGER,
     PRIMARY KEY (scope, period, threshold, quota)
   ) WITHOUT ROWID;
   INSERT INTO quota_notices_v2 SELECT scope, period, threshold, account_id, key_prefix, plan, quota, resets_at,
     created_at, sent_at FROM quota_notices;
   DROP TABLE quota_notices;
   ALTER TABLE quota_notices_v2 RENAME TO quota_notices;
   CREATE INDEX quota_notices_unsent ON quota_notices (created_at) WHERE sent_at IS NULL;`,
  // A key's prefix names its quota and usage (Redis counters, the usage tables), so two keys never share
  // one: a unique index, and the control plane draws another key on a clash. Keys that already share one
  // (a store of a million keys has about one chance in 500) keep the first's prefix on the oldest, and the others become
  // "<prefix>-<id>" (no key has a '-' in its first ten characters), with their rotation lines' quota_prefix;
  // their revision moves so the proxies take the new prefix. What they spent together stays with the first.
  `CREATE TEMP TABLE renamed_prefixes AS
     SELECT id, prefix AS old_prefix, prefix || '-' || id AS new_prefix
       FROM (SELECT id, prefix, row_number() OVER (PARTITION BY prefix ORDER BY id) AS n FROM api_keys) k
      WHERE n > 1;
   CREATE TEMP TABLE renamed_lines AS
     WITH RECURSIVE line (id, old_prefix, new_prefix) AS (
       SELECT id, old_prefix, new_prefix FROM renamed_prefixes
       UNION ALL
       SELECT k.replaced_by, line.old_prefix, line.new_prefix FROM line JOIN api_keys k ON k.id = line.id
        WHERE k.replaced_by IS NOT NULL)
     SELECT id, old_prefix, new_prefix FROM line;
   UPDATE api_keys SET quota_prefix =
       (SELECT l.new_prefix FROM renamed_lines l WHERE l.id = api_keys.id AND l.old_prefix = api_keys.quota_prefix)
    WHERE EXISTS (SELECT 1 FROM renamed_lines l WHERE l.id = api_keys.id AND l.old_prefix = api_keys.quota_prefix);
   UPDATE api_keys SET prefix = (SELECT r.new_prefix FROM renamed_prefixes r WHERE r.id = api_keys.id)
    WHERE id IN (SELECT id FROM renamed_prefixes);
   UPDATE revision SET value = value + 1 WHERE id = 1 AND EXISTS (SELECT 1 FROM renamed_lines);
   UPDATE api_keys SET revision = (SELECT value FROM revision WHERE id = 1)
    WHERE id IN (SELECT id FROM renamed_lines);
   DROP TABLE renamed_lines;
   DROP TABLE renamed_prefixes;
   CREATE UNIQUE INDEX api_keys_prefix ON api_keys (prefix);`,
  // The ids of the usage batches added (keys/usage.ts), each recorded in the transaction that adds its
  // counts: a batch sent again because its write timed out (PostgreSQL may have committed it anyway) is added
  // once. Kept a day (FLUSH_IDS_KEPT_MS), by the time they were added.
  `CREATE TABLE usage_flushes (id TEXT PRIMARY KEY, flushed_at INTEGER NOT NULL) WITHOUT ROWID;
   CREATE INDEX usage_flushes_at ON usage_flushes (flushed_at);`,
];

/** Applies the migrations this database has not seen, each in its own transaction. */
export function migrate(db: Database.Database): number {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)",
  );
  const applied =
    (db.prepare("SELECT MAX(version) AS v FROM schema_migrations").get() as { v: number | null }).v ?? 0;
  MIGRATIONS.forEach((sql, index) => {
    const version = index + 1;
    if (version <= applied) return;
    db.transaction(() => {
      db.exec(sql);
      db.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)").run(
        version,
        Date.now(),
      );
    })();
  });
  return MIGRATIONS.length;
}
