import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { request } from "undici";
import { networkCodes } from "../../generated/endpoints.js";
import {
  DEFAULT_ACCOUNTS,
  DEFAULT_CONFIG,
  DEFAULT_HEALTH,
  DEFAULT_LIMITS,
} from "../../src/config/defaults.js";
import type { AccountsConfig, GatewayConfig } from "../../src/config/types.js";
import { type ControlPlane, createControlPlane } from "../../src/control/plane.js";
import { CachedKeyStore } from "../../src/keys/key-cache.js";
import { PostgresGrantFeed } from "../../src/keys/postgres-grants.js";
import { SqliteGrantFeed } from "../../src/keys/sqlite-grants.js";
import { createLogger } from "../../src/log.js";
import { freshPostgresDatabase, needServices } from "../support/services.js";

/** Which account store a fixture runs on: the embedded SQLite file, or a fresh PostgreSQL database. */
export type StoreKind = "sqlite" | "postgres";

/**
 * The stores the store's behaviour suites run against here: SQLite always, PostgreSQL when the machine's
 * server answers (test/support/services.ts prints why not, and under CI a missing server fails instead).
 */
export const STORES: readonly StoreKind[] = (await needServices("postgres")).skip
  ? ["sqlite"]
  : ["sqlite", "postgres"];

/** The control plane, and the proxy's key cache reading its store, as `npm start` wires them. */
export interface Accounts extends ControlPlane {
  readonly keys: CachedKeyStore;
}

export interface AccountsFixture {
  readonly accounts: Accounts;
  readonly dir: string;
  /** The SQLite file, or the PostgreSQL database's URL. */
  readonly database: string;
  readonly store: StoreKind;
  readonly logs: string[];
  readonly origin: string;
  /** Moves this fixture's clock forward. */
  advance(ms: number): void;
  api(method: "GET" | "POST" | "PUT", path: string, body?: unknown, session?: string): Promise<ApiAnswer>;
  /** Everything the store holds on disk, as text: the SQLite files, or every PostgreSQL table's rows. */
  dump(): Promise<string>;
  close(): Promise<void>;
}

/** The API's answer; tests read whichever fields the call under test returns. */
// biome-ignore lint/suspicious/noExplicitAny: assertions walk arbitrary JSON answers
export type ApiAnswer = { status: number; json: any };

/**
 * A control plane (account store, service and self-service API) on a fresh store, and the proxy's key
 * cache following that store, with a movable clock. `close()` removes its folder (`dir`) and database.
 */
export async function startAccounts(
  overrides: Partial<AccountsConfig> = {},
  smtpPort?: number,
  store: StoreKind = "sqlite",
  gateway?: Pick<GatewayConfig, "domain" | "listen" | "support"> &
    Partial<Pick<GatewayConfig, "plans" | "upstreams">>,
): Promise<AccountsFixture> {
  const dir = mkdtempSync(join(tmpdir(), "accounts-"));
  const postgres = store === "postgres" ? await freshPostgresDatabase() : undefined;
  const database = postgres?.url ?? join(dir, "gateway.sqlite");
  let offset = 0;
  const logs: string[] = [];
  const config: AccountsConfig = {
    ...DEFAULT_ACCOUNTS,
    database,
    listen: { host: "127.0.0.1", port: 0 },
    mail: {
      from: "gateway@example.com",
      outbox: join(dir, "outbox"),
      ...(smtpPort === undefined ? {} : { smtp: { host: "127.0.0.1", port: smtpPort } }),
    },
    signupRatePerIp: { perSecond: 100, burst: 100 },
    signupRatePerEmail: { perSecond: 100, burst: 100 },
    ...overrides,
  };
  const now = () => Date.now() + offset;
  const control = await createControlPlane({
    config,
    networks: new Set(networkCodes),
    trustedProxies: [],
    logger: createLogger("debug", (line) => logs.push(line)),
    now,
    ...(gateway === undefined ? {} : { gateway }),
  });
  const keys = await CachedKeyStore.open(
    postgres === undefined
      ? new SqliteGrantFeed(database, config.followIntervalMs)
      : new PostgresGrantFeed(database),
    { perSecond: 1000, burst: 1000 },
    now,
  );
  keys.follow();
  control.onKeysChanged(() => keys.refresh());
  const accounts: Accounts = {
    ...control,
    keys,
    async close() {
      await keys.close();
      await control.close();
      await postgres?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await new Promise<void>((resolve) => accounts.api.listen(0, "127.0.0.1", resolve));
  const { port } = accounts.api.address() as { port: number };
  const origin = `http://127.0.0.1:${port}`;
  return {
    accounts,
    dir,
    database,
    store,
    logs,
    origin,
    advance(ms) {
      offset += ms;
    },
    async api(method, path, body, session) {
      const response = await request(`${origin}${path}`, {
        method,
        headers: {
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...(session === undefined ? {} : { authorization: `Bearer ${session}` }),
        },
        ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
      });
      const text = await response.body.text();
      return { status: response.statusCode, json: text === "" ? undefined : JSON.parse(text) };
    },
    async dump() {
      if (postgres === undefined)
        return readdirSync(dir)
          .filter((f) => f.startsWith("gateway.sqlite"))
          .map((f) => readFileSync(join(dir, f)).toString("latin1"))
          .join("");
      const client = new pg.Client(database);
      await client.connect();
      try {
        // one query at a time: pg deprecates a second query on a client still running one
        const rows: unknown[][] = [];
        for (const table of ["accounts", "tokens", "api_keys", "usage", "revision"])
          rows.push((await client.query(`SELECT * FROM ${table}`)).rows);
        return JSON.stringify(rows);
      } finally {
        await client.end();
      }
    },
    close: () => accounts.close(),
  };
}

/** The accounts section a proxy reads the fixture's store with: the defaults, on its store, flushing often. */
export function fixtureAccounts(
  fx: AccountsFixture,
  usageFlushIntervalMs = 200,
): NonNullable<GatewayConfig["accounts"]> {
  return {
    ...DEFAULT_ACCOUNTS,
    database: fx.database,
    listen: { host: "127.0.0.1", port: 0 },
    mail: { from: "gw@example.com", outbox: join(fx.dir, "outbox") },
    followIntervalMs: 50,
    usageFlushIntervalMs,
  };
}

/**
 * A proxy on the fixture's store (fixtureAccounts), listening on `port` and serving `eth` from `node`, with
 * no operator API, probes, drain wait or log; `more` (plans, sharedLimits…) on top.
 */
export function proxyOnFixture(
  fx: AccountsFixture,
  port: number,
  node: string,
  more: Partial<GatewayConfig> = {},
  usageFlushIntervalMs = 200,
): GatewayConfig {
  return {
    ...DEFAULT_CONFIG,
    listen: { host: "127.0.0.1", port },
    operator: undefined,
    upstreams: { eth: [node] },
    health: { ...DEFAULT_HEALTH, probeIntervalMs: 0 },
    limits: { ...DEFAULT_LIMITS, drainTimeoutMs: 0 },
    log: { level: "silent", access: false },
    accounts: fixtureAccounts(fx, usageFlushIntervalMs),
    ...more,
  };
}

/**
 * A fixture on SQLite whose control plane is the dashboard of a proxy listening on `port` on localhost (with
 * `plans`, else the defaults), following its store every 50 ms and flushing usage every `usageFlushIntervalMs`.
 */
export function startAccountsFor(
  port: number,
  plans?: GatewayConfig["plans"],
  usageFlushIntervalMs = 200,
): Promise<AccountsFixture> {
  const gateway = {
    domain: "localhost",
    listen: { host: "127.0.0.1", port },
    support: DEFAULT_CONFIG.support,
    ...(plans === undefined ? {} : { plans }),
  };
  return startAccounts({ usageFlushIntervalMs, followIntervalMs: 50 }, undefined, "sqlite", gateway);
}
