import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
import { startTcpForwarder, type TcpForwarder } from "../support/tcp-forwarder.js";

const binaries = needOwnServerBinaries("postgres", "redis");

// A proxy whose path to Redis goes silent: the Redis host dies or the network splits, and no FIN or RST
// reaches the proxy (test/support/tcp-forwarder.ts, between the proxy and this test's own Redis, drops
// every byte and closes nothing; once restored, it carries new connections while the old ones stay
// silent). The shared rate limits' connection never closed by itself: every lease timed out, the proxy
// limited each key alone for good after Redis was back, and a fleet granted each key its rate once per
// proxy.

describe.skipIf(binaries.skip)("a proxy whose path to Redis turns into a black hole", () => {
  let postgres: OwnPostgres;
  let redis: OwnRedis;
  let forwarder: TcpForwarder;
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
    forwarder = await startTcpForwarder(redis.port);
    dir = mkdtempSync(join(tmpdir(), "redis-hole-"));
    control = await startFleetControlPlane(postgres.url, dir);
    const accountId = (await control.service.admin.createAccount("hole@example.com")).id;
    ({ key } = await control.service.keys.issue(accountId, { networks: ["eth"], plan: "shared" }));
    const config = writeFleetConfig(dir, {
      database: postgres.url,
      redis: `redis://127.0.0.1:${forwarder.port}`,
      upstream: node.url,
    });
    proxy = await startFleetProxy(config);
    await eventually(async () => (await proxy.dependencyUp("shared_limits")) === 1, 10_000, "shared");
  }, 60_000);
  afterAll(async () => {
    if (proxy !== undefined) await stopFleetProxy(proxy);
    await control?.close();
    await forwarder?.close();
    await Promise.all([postgres?.close(), redis?.close(), node?.close()]);
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  it("leases its keys' tokens from Redis again once the path is back", async () => {
    /** A call (served whatever Redis does), then whether `done` holds of the leases. */
    const callUntil = (done: (l: Record<string, number>) => boolean, what: string, ms: number) =>
      eventually(
        async () => {
          expect(await proxy.call(key)).toBe(200);
          return done(await proxy.leaseOutcomes());
        },
        ms,
        what,
      );
    await callUntil((l) => (l.granted ?? 0) > 0, "a lease granted", 10_000);
    forwarder.blackHole();
    const failed = (await proxy.leaseOutcomes()).failed ?? 0;
    // the connection stays open and silent: leases time out (commandTimeout), calls are served alone
    await callUntil((l) => (l.failed ?? 0) > failed + 1, "leases failing in the dark", 15_000);
    forwarder.restore();
    const granted = (await proxy.leaseOutcomes()).granted ?? 0;
    // a reconnection begun in the dark waits out its connect timeout (2 s), the next comes within the
    // backoff's 5 s; and slack for a loaded host
    const took = await callUntil(
      (l) => (l.granted ?? 0) > granted,
      "a lease granted after the path is back",
      20_000,
    );
    console.log(`rate-limit leases granted again ${took.toFixed(0)} ms after the path to Redis was back`);
    expect(proxy.child.exitCode).toBeNull();
  }, 60_000);
});
