import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { networkCodes } from "../../generated/endpoints.js";
import { DEFAULT_ACCOUNTS } from "../../src/config/defaults.js";
import { type ControlPlane, createControlPlane } from "../../src/control/plane.js";
import { keyHash } from "../../src/keys/digest.js";
import type { GrantFeed, GrantStatus } from "../../src/keys/grants.js";
import { CachedKeyStore } from "../../src/keys/key-cache.js";
import { PostgresGrantFeed } from "../../src/keys/postgres-grants.js";
import { RECONNECT_MAX_MS, reconnectDelay } from "../../src/keys/reconnect-backoff.js";
import { createLogger } from "../../src/log.js";
import { eventually } from "../support/eventually.js";
import { freshPostgresDatabase, needServices } from "../support/services.js";

// The proxy's key cache on a real PostgreSQL feed (a fresh database on the machine's server), with a fault
// injected at the feed's interface: its next reads of what changed fail. The revocation is the store's last
// change, so no later notification would ask for the read again: the cache must retry on its own.

const services = await needServices("postgres");

/** Reads that fail in a row: the retries wait 50, 100 and 200 ms at most (reconnect-backoff.ts). */
const FAILURES = 3;
/** The longest of those waits, and a read, and the slack a loaded machine needs. */
const REFUSED_WITHIN_MS =
  Array.from({ length: FAILURES }, (_, attempt) => reconnectDelay(attempt, () => 1)).reduce((a, b) => a + b) +
  500;

describe.skipIf(services.skip)("the key cache, when a read of what changed fails", () => {
  let database: Awaited<ReturnType<typeof freshPostgresDatabase>>;
  let control: ControlPlane;
  let cache: CachedKeyStore;
  let dir = "";
  let accountId = 0;
  let failNext = 0;
  let reads = 0;
  const statuses: GrantStatus[] = [];

  beforeAll(async () => {
    database = await freshPostgresDatabase();
    dir = mkdtempSync(join(tmpdir(), "catch-up-"));
    control = await createControlPlane({
      config: {
        ...DEFAULT_ACCOUNTS,
        database: database.url,
        listen: { host: "127.0.0.1", port: 0 },
        mail: { from: "gw@example.com", outbox: join(dir, "outbox") },
      },
      networks: new Set(networkCodes),
      trustedProxies: [],
      logger: createLogger("silent"),
    });
    accountId = (await control.service.admin.createAccount("retry@example.com")).id;
    const real = new PostgresGrantFeed(database.url);
    // the fault: the read itself fails, as a query the server refused or a connection cut mid-read would
    const feed: GrantFeed = {
      async changesSince(revision) {
        reads += 1;
        if (failNext > 0) {
          failNext -= 1;
          throw new Error("injected: the read of what changed failed");
        }
        return real.changesSince(revision);
      },
      watch: (listener, status) => real.watch(listener, status),
      close: () => real.close(),
    };
    // the cache learns of changes from the feed's notifications only: the control plane does not call it
    cache = await CachedKeyStore.open(feed, { perSecond: 100, burst: 100 });
    cache.onStatus((status) => statuses.push(status));
    cache.follow();
  }, 30_000);
  afterAll(async () => {
    await cache?.close();
    await control?.close();
    await database?.drop();
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  it(`tries it again until it succeeds: a key revoked as the last change is refused within ${REFUSED_WITHIN_MS} ms`, async () => {
    const { key, view } = await control.service.keys.issue(accountId, { networks: ["eth"], plan: "shared" });
    const digest = keyHash(key);
    await eventually(() => cache.lookup(digest) !== undefined, 5_000, "the cache holds the new key");

    failNext = FAILURES;
    const readsBefore = reads;
    await control.service.keys.revokeAny(view.id);
    const refused = await eventually(
      () => cache.lookup(digest) === undefined,
      10_000,
      "the cache drops the revoked key",
    );
    console.log(
      `${FAILURES} reads failed in a row; the cache dropped the revoked key ${refused.toFixed(0)} ms after the revocation, after ${reads - readsBefore} reads`,
    );
    expect(refused).toBeLessThan(REFUSED_WITHIN_MS);
    expect(failNext).toBe(0);
    expect(reads - readsBefore).toBe(FAILURES + 1);
    expect(statuses.map((s) => s.reachable)).toEqual([false, true]);
    expect(statuses[0]?.reason).toBe("injected: the read of what changed failed");
    expect(cache.reachable).toBe(true);
  });

  it("stops trying once a read succeeds", async () => {
    const settled = reads;
    // what is under test is that nothing happens: a retry would come within RECONNECT_MAX_MS
    await new Promise((resolve) => setTimeout(resolve, 4 * RECONNECT_MAX_MS));
    expect(reads).toBe(settled);
  });
});
