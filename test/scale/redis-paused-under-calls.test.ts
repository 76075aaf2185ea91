import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
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

const binaries = needOwnServerBinaries("postgres", "redis");

// A Redis that holds every client's commands for 3 s (CLIENT PAUSE 3000 ALL: a slow fork, a failover's
// pause, an operator's pause): the connections stay up and answer nothing meanwhile. The proxy must keep
// answering its callers, limits and quotas decided locally (docs/deployment.md, "When something fails":
// "Redis connected but hung or slow": no wait, no error), and share them again once Redis goes on.

/**
 * A call while Redis is paused waits at most one quota lease's deadline (its 1 s command timeout), and slack
 * for a loaded host: calls queued behind a lease that failed each waited for one of their own in turn.
 */
const CALL_WITHIN_MS = 2_000;

describe.skipIf(binaries.skip)("a proxy whose Redis pauses every client for 3 s", () => {
  let postgres: OwnPostgres;
  let redis: OwnRedis;
  let admin: Redis;
  let node: LoopbackNode;
  let control: ControlPlane;
  let proxy: FleetProxy;
  let dir = "";
  let key = "";

  beforeAll(async () => {
    [postgres, redis, node] = await Promise.all([
      startOwnPostgres(),
      startOwnRedis(),
      startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a" })),
    ]);
    admin = new Redis(redis.url);
    dir = mkdtempSync(join(tmpdir(), "redis-paused-"));
    control = await startFleetControlPlane(postgres.url, dir);
    const accountId = (await control.service.admin.createAccount("paused@example.com")).id;
    ({ key } = await control.service.keys.issue(accountId, { networks: ["eth"], plan: "shared" }));
    const config = writeFleetConfig(dir, { database: postgres.url, redis: redis.url, upstream: node.url });
    proxy = await startFleetProxy(config);
    await eventually(async () => (await proxy.dependencyUp("shared_limits")) === 1, 10_000, "shared");
  }, 60_000);
  afterAll(async () => {
    if (proxy !== undefined) await stopFleetProxy(proxy);
    await control?.close();
    admin?.disconnect();
    await Promise.all([postgres?.close(), redis?.close(), node?.close()]);
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  it("keeps answering while Redis is paused, and shares its limits again after", async () => {
    /** A call, which must be answered in time whatever Redis does: served, or refused by its rate. */
    let slowest = 0;
    let pausedAt = 0;
    const served: number[] = [];
    const call = async () => {
      const started = performance.now();
      const status = await proxy.call(key);
      expect([200, 429]).toContain(status);
      if (status === 200) served.push(started - pausedAt);
      slowest = Math.max(slowest, performance.now() - started);
    };
    await eventually(
      async () => {
        await call();
        return ((await proxy.leaseOutcomes()).granted ?? 0) > 0;
      },
      10_000,
      "a lease granted",
    );
    const failed = (await proxy.leaseOutcomes()).failed ?? 0;
    slowest = 0;
    pausedAt = performance.now();
    served.length = 0;
    await admin.call("CLIENT", "PAUSE", "3000", "ALL");
    // calls all through the pause, four at a time
    while (performance.now() - pausedAt < 3_500) await Promise.all([call(), call(), call(), call()]);
    // served while Redis held every command, the limits and quotas decided here
    expect(served.filter((at) => at < 2_500).length).toBeGreaterThan(0);
    console.log(`slowest call while Redis was paused: ${slowest.toFixed(0)} ms`);
    expect(slowest).toBeLessThan(CALL_WITHIN_MS);
    expect((await proxy.leaseOutcomes()).failed ?? 0).toBeGreaterThan(failed);
    const granted = (await proxy.leaseOutcomes()).granted ?? 0;
    const took = await eventually(
      async () => {
        await call();
        return (
          ((await proxy.leaseOutcomes()).granted ?? 0) > granted &&
          (await proxy.dependencyUp("shared_limits")) === 1
        );
      },
      15_000,
      "a lease granted after the pause",
    );
    console.log(`leases granted again ${took.toFixed(0)} ms after the pause`);
    expect(proxy.child.exitCode).toBeNull();
  }, 60_000);
});
