import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControlPlane } from "../../src/control/plane.js";
import { eventually } from "../support/eventually.js";
import {
  type FleetProxy,
  startFleetControlPlane,
  startFleetProxy,
  stopFleetProxy,
  writeFleetConfig,
} from "../support/fleet.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import {
  needOwnServerBinaries,
  type OwnPostgres,
  type OwnRedis,
  startOwnPostgres,
  startOwnRedis,
} from "../support/own-servers.js";

// An operator's fleet: two proxy processes and a control plane on this test's own PostgreSQL and Redis (it
// cuts their connections and stops them). Calls go on all the while, so that the stores go away in the middle
// of the proxies' own work on them: a usage flush's transaction, the listening connection's heartbeat or read,
// a lease or a head rise in Redis. The proxies must stay up, relay every call whose key they hold, and use the
// stores again once they are back.

const binaries = needOwnServerBinaries("postgres", "redis");
const RATE = { perSecond: 100_000, burst: 100_000 };
/** How long a proxy may take to be on a store again: its reconnection backoff, and slack for a loaded host. */
const BACK_WITHIN_MS = 15_000;
/** One call to each proxy every 25 ms: 80 calls a second, well under the shared plan's 200. */
const PACE_MS = 25;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(binaries.skip)("a fleet whose stores' connections are cut under load", () => {
  let postgres: OwnPostgres;
  let redis: OwnRedis;
  let node: LoopbackNode;
  let control: ControlPlane;
  let admin: Redis;
  let dir = "";
  let accountId = 0;
  let key = "";
  const proxies: FleetProxy[] = [];

  /** Calls on every proxy with `key` until stopped; how many of each status.  */
  const load = () => {
    const statuses = new Map<number, number>();
    let running = true;
    const loop = (async () => {
      while (running) {
        const round = performance.now();
        for (const status of await Promise.all(proxies.map((p) => p.call(key).catch(() => 0))))
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        // a round every PACE_MS at most: the shared plan's compute units allow 200 calls a second
        await sleep(Math.max(0, PACE_MS - (performance.now() - round)));
      }
    })();
    return {
      statuses,
      async stop() {
        running = false;
        await loop;
        return statuses;
      },
    };
  };
  const alive = () => {
    for (const proxy of proxies) {
      expect(proxy.child.exitCode ?? proxy.child.signalCode, proxy.logs.slice(-40).join("\n")).toBeNull();
    }
  };
  const dependency = (name: "account_store" | "shared_limits", value: number) =>
    eventually(
      async () => (await Promise.all(proxies.map((p) => p.dependencyUp(name)))).every((v) => v === value),
      BACK_WITHIN_MS,
      `${name} ${value === 1 ? "up" : "down"} on every proxy`,
    );
  /** A key issued now reaches every proxy, and its revocation too: the proxies follow the store again. */
  const followsStore = async () => {
    const { key: fresh, view } = await control.service.keys.issue(accountId, {
      networks: ["eth"],
      plan: "shared",
      rate: RATE,
    });
    await eventually(
      async () => (await Promise.all(proxies.map((p) => p.knows(fresh)))).every(Boolean),
      BACK_WITHIN_MS,
      "a new key known to every proxy",
    );
    await control.service.keys.revokeAny(view.id);
    await eventually(
      async () => (await Promise.all(proxies.map((p) => p.knows(fresh)))).every((k) => !k),
      BACK_WITHIN_MS,
      "a revoked key refused by every proxy",
    );
  };
  /**
   * The key's units in the store: the proxies' usage flushes land. -1 when the control plane's own read
   * failed: a pooled connection cut a moment ago fails the one query that takes it before its end is read.
   */
  const units = async () => {
    const today = new Date().toISOString().slice(0, 10);
    const rows = await control.store.usage([key.slice(0, 10)], today, today).catch(() => undefined);
    return rows === undefined ? -1 : rows.reduce((sum, row) => sum + row.units, 0);
  };
  /** The key's units once the control plane reads them. */
  const unitsRead = async () => {
    let read = -1;
    await eventually(
      async () => {
        read = await units();
        return read >= 0;
      },
      BACK_WITHIN_MS,
      "the units read",
    );
    return read;
  };
  const flushesLand = async () => {
    const before = await unitsRead();
    for (const proxy of proxies) expect(await proxy.call(key)).toBe(200);
    await eventually(async () => (await units()) > before, BACK_WITHIN_MS, "usage flushed again");
  };
  /** Ends every PostgreSQL connection but the one asking (each is a server process of its own). */
  const terminateBackends = async () => {
    const client = new pg.Client({ connectionString: postgres.url });
    client.on("error", () => {});
    await client.connect();
    try {
      const { rows } = await client.query<{ ended: boolean }>(
        "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'",
      );
      return rows.length;
    } finally {
      await client.end();
    }
  };
  /** How many connections listen on the shared heads' channel (database 0). */
  const headSubscribers = async () => {
    const [, count] = (await admin.call("PUBSUB", "NUMSUB", "gateway:heads:0")) as [string, number];
    return Number(count);
  };

  beforeAll(async () => {
    await Promise.all([
      startOwnPostgres().then((started) => {
        postgres = started;
      }),
      startOwnRedis().then((started) => {
        redis = started;
      }),
      startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a" })).then((started) => {
        node = started;
      }),
    ]);
    admin = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    admin.on("error", () => {});
    dir = mkdtempSync(join(tmpdir(), "stores-cut-"));
    control = await startFleetControlPlane(postgres.url, dir);
    accountId = (await control.service.admin.createAccount("cut@example.com")).id;
    ({ key } = await control.service.keys.issue(accountId, {
      networks: ["eth"],
      plan: "shared",
      rate: RATE,
    }));
    const config = writeFleetConfig(dir, { database: postgres.url, redis: redis.url, upstream: node.url });
    await Promise.all([0, 1].map(async () => proxies.push(await startFleetProxy(config))));
    await dependency("shared_limits", 1);
    await eventually(async () => (await headSubscribers()) >= proxies.length, 10_000, "heads subscribed");
  }, 60_000);
  afterAll(async () => {
    await Promise.all(proxies.map(stopFleetProxy));
    admin?.disconnect();
    await control?.close();
    await Promise.all([postgres?.close(), redis?.close(), node?.close()]);
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  it("survives every PostgreSQL connection terminated, again and again, mid-flush", async () => {
    const calls = load();
    for (let round = 0; round < 6; round++) {
      const flushed = await unitsRead();
      await terminateBackends();
      // the next round cuts the connections the proxies made again: after a flush that went through
      await eventually(async () => (await units()) > flushed, BACK_WITHIN_MS, "a flush after the cut");
      alive();
    }
    const statuses = await calls.stop();
    alive();
    expect([...statuses.keys()]).toEqual([200]);
    await dependency("account_store", 1);
    await followsStore();
    await flushesLand();
    alive();
  }, 120_000);

  it("survives a storm of terminated PostgreSQL connections: every connection attempt cut too", async () => {
    const calls = load();
    const began = performance.now();
    // cuts whatever the proxies hold or are opening (a LISTEN, a read, a flush's transaction) for 4 s: a
    // backend ended as it starts sends its FATAL right behind its ReadyForQuery, which ended a proxy
    // (test/accounts/connection-lost-at-connect.test.ts)
    while (performance.now() - began < 4_000) {
      await terminateBackends();
      alive();
    }
    const statuses = await calls.stop();
    alive();
    expect([...statuses.keys()]).toEqual([200]);
    await dependency("account_store", 1);
    await followsStore();
    await flushesLand();
    alive();
  }, 120_000);

  it("survives PostgreSQL stopped fast and started again, twice", async () => {
    const calls = load();
    for (let round = 0; round < 2; round++) {
      await postgres.stop();
      await dependency("account_store", 0);
      await postgres.start();
      await dependency("account_store", 1);
      alive();
    }
    const statuses = await calls.stop();
    alive();
    expect([...statuses.keys()]).toEqual([200]);
    await followsStore();
    await flushesLand();
  }, 120_000);

  it("survives Redis's connections killed, normal and pub/sub, again and again", async () => {
    const calls = load();
    for (let round = 0; round < 4; round++) {
      await admin.call("CLIENT", "KILL", "TYPE", round % 2 === 0 ? "normal" : "pubsub");
      await dependency("shared_limits", 1);
      await eventually(
        async () => (await headSubscribers()) >= proxies.length,
        BACK_WITHIN_MS,
        "resubscribed",
      );
      alive();
    }
    const statuses = await calls.stop();
    alive();
    expect([...statuses.keys()]).toEqual([200]);
  }, 120_000);

  it("survives a storm of killed Redis connections", async () => {
    const calls = load();
    const began = performance.now();
    // a subscriber cut again before Redis answered its resubscription ended a proxy
    // (test/scale/shared-heads-resubscribe-cut.test.ts)
    while (performance.now() - began < 3_000) {
      await admin.call("CLIENT", "KILL", "TYPE", "normal");
      await admin.call("CLIENT", "KILL", "TYPE", "pubsub");
      alive();
    }
    const statuses = await calls.stop();
    alive();
    expect([...statuses.keys()]).toEqual([200]);
    await dependency("shared_limits", 1);
    await eventually(async () => (await headSubscribers()) >= proxies.length, BACK_WITHIN_MS, "resubscribed");
  }, 120_000);

  it("survives Redis shut down without saving and started again, twice", async () => {
    const calls = load();
    for (let round = 0; round < 2; round++) {
      await admin.call("SHUTDOWN", "NOSAVE").catch(() => {});
      await redis.stop();
      await dependency("shared_limits", 0);
      await redis.start();
      await dependency("shared_limits", 1);
      await eventually(
        async () => (await headSubscribers()) >= proxies.length,
        BACK_WITHIN_MS,
        "resubscribed",
      );
      alive();
    }
    const statuses = await calls.stop();
    alive();
    expect([...statuses.keys()]).toEqual([200]);
    await followsStore();
  }, 120_000);
});
