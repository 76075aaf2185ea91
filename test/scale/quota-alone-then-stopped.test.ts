import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PLANS, PLAN_FIELDS } from "../../src/config/defaults.js";
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

// docs/plans.md, "Many instances": while Redis hangs each proxy counts a quota alone, "so a spent quota stays
// spent", and what it served alone is added to Redis's counters once Redis answers. A rolling deploy stops
// that proxy before Redis answers again: the proxy that replaces it must not serve the quota a second time.
// This suite's own PostgreSQL and Redis (it pauses Redis: SIGSTOP by its PID, then SIGCONT).

const binaries = needOwnServerBinaries("postgres", "redis");

/** Ten eth_blockNumber calls of 10 compute units each. */
const QUOTA = 100;
const UNITS_PER_CALL = 10;
const PLANS = { metered: { computeUnitRate: { perSecond: 1_000, burst: 1_000 }, dailyQuota: QUOTA } };

describe.skipIf(binaries.skip)("a quota counted alone by a proxy stopped while Redis hangs", () => {
  let postgres: OwnPostgres;
  let redis: OwnRedis;
  let node: LoopbackNode;
  let control: ControlPlane;
  let dir = "";
  let config = "";
  let paused = false;
  const proxies: FleetProxy[] = [];

  beforeAll(async () => {
    [postgres, redis, node] = await Promise.all([
      startOwnPostgres(),
      startOwnRedis(),
      startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a" })),
    ]);
    dir = mkdtempSync(join(tmpdir(), "quota-alone-"));
    control = await startFleetControlPlane(postgres.url, dir, undefined, {
      ...DEFAULT_PLANS,
      metered: { ...PLAN_FIELDS, ...PLANS.metered },
    });
    config = writeFleetConfig(dir, {
      database: postgres.url,
      redis: redis.url,
      upstream: node.url,
      extra: [`plans: ${JSON.stringify(PLANS)}`],
    });
  }, 60_000);

  afterAll(async () => {
    if (paused) process.kill(redis.pid, "SIGCONT");
    await Promise.all(proxies.map(stopFleetProxy));
    await control?.close();
    await Promise.all([postgres?.close(), redis?.close(), node?.close()]);
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  /** Calls with `key` through `proxy` until one is refused (at most `max`): how many were served. */
  const served = async (proxy: FleetProxy, key: string, max: number) => {
    for (let i = 0; i < max; i++) {
      const status = await proxy.call(key);
      if (status !== 200) {
        expect(status).toBe(402);
        return i;
      }
    }
    return max;
  };

  it("serves the day's quota once across the two", async () => {
    const first = await startFleetProxy(config);
    proxies.push(first);
    const accountId = (await control.service.admin.createAccount("alone@example.com")).id;
    const { key } = await control.service.keys.issue(accountId, { networks: ["eth"], plan: "metered" });
    await eventually(() => first.knows(key), 5_000, "the key known");
    // a call while Redis answers: the quota's month is started in Redis, and this proxy holds a lease
    expect(await first.call(key)).toBe(200);

    process.kill(redis.pid, "SIGSTOP");
    paused = true;
    const before = await served(first, key, 20);
    expect(first.logs.join("\n")).toContain("each instance counts its quotas alone");
    // a rolling deploy stops it (its usage counts go to the store) while Redis hangs; Redis answers again
    // as it stops, or once it is gone
    const exited = new Promise<unknown>((resolve) => first.child.once("exit", resolve));
    let gone = false;
    void exited.then(() => {
      gone = true;
    });
    const seen = first.logs.length;
    first.child.kill("SIGTERM");
    await eventually(
      () =>
        gone || first.logs.slice(seen).some((line) => line.includes("stopping while Redis is unreachable")),
      20_000,
      "the stop under way",
    );
    process.kill(redis.pid, "SIGCONT");
    paused = false;
    await exited;

    const next = await startFleetProxy(config);
    proxies.push(next);
    await eventually(() => next.knows(key), 5_000, "the key known to the next");
    await eventually(async () => (await next.dependencyUp("shared_limits")) === 1, 10_000, "Redis shared");
    const after = await served(next, key, 20);
    console.log(`served ${1 + before} calls before the stop, ${after} after`);
    expect((1 + before + after) * UNITS_PER_CALL).toBeLessThanOrEqual(QUOTA);
  }, 90_000);
});
