import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RateSpec } from "../../src/config/types.js";
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

// Three proxy processes and the control plane sharing one PostgreSQL and one Redis, all on loopback. The
// servers are this test's own (it stops and restarts them), never the machine's shared ones.

const binaries = needOwnServerBinaries("postgres", "redis");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(binaries.skip)("three proxies and a control plane on PostgreSQL and Redis", () => {
  let postgres: OwnPostgres;
  let redis: OwnRedis;
  let node: LoopbackNode;
  let control: ControlPlane;
  let controlOrigin = "";
  let accountId = 0;
  let dir = "";
  const proxies: FleetProxy[] = [];
  const issued: string[] = [];

  const issue = async (rate?: RateSpec) => {
    const { key, view } = await control.service.keys.issue(accountId, {
      networks: ["eth"],
      plan: "shared",
      ...(rate === undefined ? {} : { rate }),
    });
    issued.push(key);
    return { key, id: view.id };
  };
  /** Every proxy's status for `key`, at once. */
  const statuses = (key: string) => Promise.all(proxies.map((p) => p.call(key)));
  /** Waits until every proxy knows `key` (through the store's feed), without spending its rate. */
  const known = (key: string) =>
    eventually(
      async () => (await Promise.all(proxies.map((p) => p.knows(key)))).every(Boolean),
      2_000,
      "the key known to the three",
    );
  /** Waits until every proxy's gateway_dependency_up for `dependency` is `value`. */
  const dependency = (name: "account_store" | "shared_limits", value: number, timeoutMs: number) =>
    eventually(
      async () => (await Promise.all(proxies.map((p) => p.dependencyUp(name)))).every((v) => v === value),
      timeoutMs,
      `${name} ${value === 1 ? "up" : "down"} on the three`,
    );

  beforeAll(async () => {
    // each kept as soon as it runs, so that afterAll stops it (by its PID) when another failed to start
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
    dir = mkdtempSync(join(tmpdir(), "fleet-"));
    control = await startFleetControlPlane(postgres.url, dir);
    await new Promise<void>((resolve) => control.api.listen(0, "127.0.0.1", resolve));
    controlOrigin = `http://127.0.0.1:${(control.api.address() as { port: number }).port}`;
    accountId = (await control.service.admin.createAccount("fleet@example.com")).id;
    const config = writeFleetConfig(dir, { database: postgres.url, redis: redis.url, upstream: node.url });
    await Promise.all([0, 1, 2].map(async () => proxies.push(await startFleetProxy(config))));
  }, 60_000);
  afterAll(async () => {
    await Promise.all(proxies.map(stopFleetProxy));
    await control?.close();
    await Promise.all([postgres?.close(), redis?.close(), node?.close()]);
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a key revoked through the control plane on all three, within milliseconds", async () => {
    const times: number[] = [];
    for (let round = 0; round < 5; round++) {
      const { key, id } = await issue();
      let served = await statuses(key);
      // a new key reaches every proxy through the same feed
      for (let i = 0; i < 50 && served.some((s) => s !== 200); i++) {
        await sleep(10);
        served = await statuses(key);
      }
      expect(served).toEqual([200, 200, 200]);
      await control.service.keys.revokeAny(id);
      const revoked = performance.now();
      const refusedAt = await Promise.all(
        proxies.map(async (proxy) => {
          while ((await proxy.call(key)) !== 401) {
            if (performance.now() - revoked > 2_000) throw new Error("still served 2 s after its revocation");
            await sleep(2);
          }
          return performance.now() - revoked;
        }),
      );
      times.push(Math.max(...refusedAt));
    }
    times.sort((a, b) => a - b);
    console.log(
      `revocation reached all three proxies in ${times.map((t) => t.toFixed(1)).join(", ")} ms (median ${times[2]?.toFixed(1)} ms)`,
    );
    expect(Math.max(...times)).toBeLessThan(1_000);
  }, 30_000);

  it("holds a key's rate across the three taking its traffic in turn: within ±10% over 10 s", async () => {
    const rate = { perSecond: 50, burst: 10 };
    const { key } = await issue(rate);
    await known(key);
    const counts = new Map<number, number>();
    const started = performance.now();
    const pending: Promise<void>[] = [];
    // 150 calls a second, three times the rate; each proxy takes the traffic for a quarter second in turn
    for (let sent = 0; performance.now() - started < 10_000; sent++) {
      const turn = Math.floor((performance.now() - started) / 250) % 3;
      const proxy = proxies[turn] as FleetProxy;
      pending.push(proxy.call(key).then((status) => void counts.set(status, (counts.get(status) ?? 0) + 1)));
      const due = started + ((sent + 1) * 1000) / 150;
      await sleep(Math.max(0, due - performance.now()));
    }
    await Promise.all(pending);
    const allowed = counts.get(200) ?? 0;
    const expected = rate.burst + rate.perSecond * 10;
    console.log(
      `rate across three proxies: ${allowed} allowed of ${[...counts.values()].reduce((a, b) => a + b, 0)} in 10 s, for ${expected} expected (${(allowed / expected).toFixed(3)}x)`,
    );
    expect([...counts.keys()].filter((status) => status !== 200 && status !== 429)).toEqual([]);
    expect(Math.abs(allowed - expected)).toBeLessThanOrEqual(rate.perSecond * 10 * 0.1);
  }, 30_000);

  it("shares a public client's per-IP limit across the three the same way", async () => {
    // publicRate is 2/s, burst 10: thirty quick calls from one address, ten to each proxy
    const statuses: number[] = [];
    const began = performance.now();
    for (let i = 0; i < 30; i++) statuses.push(await (proxies[i % 3] as FleetProxy).callPublic());
    const refilled = Math.ceil(((performance.now() - began) / 1000) * 2);
    const allowed = statuses.filter((s) => s === 200).length;
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    // the burst, a token of credit per proxy and what refilled meanwhile; alone, each would allow all ten
    expect(allowed).toBeGreaterThanOrEqual(10);
    expect(allowed).toBeLessThanOrEqual(10 + 3 + refilled);
  });

  it("keeps serving through a Redis restart: no 5xx, limits local meanwhile, shared again after", async () => {
    const rate = { perSecond: 5, burst: 20 };
    const { key } = await issue(rate);
    await known(key);
    const seen: number[] = [];
    let streaming = true;
    let redisDown = false;
    let duringOutage = 0;
    // a steady stream of calls with another key through the whole restart
    const stream = (async () => {
      const { key: other } = await issue({ perSecond: 1000, burst: 1000 });
      await known(other);
      for (let i = 0; streaming; i++) {
        seen.push(await (proxies[i % 3] as FleetProxy).call(other));
        if (redisDown) duringOutage += 1;
        await sleep(10);
      }
    })();

    // the stream is under way with its own key before Redis goes
    await eventually(() => seen.length >= 10, 5_000, "the stream under way");
    await redis.stop();
    redisDown = true;
    await dependency("shared_limits", 0, 2_000);
    // local limits: each proxy grants the key its whole burst alone (fallbackShare 1)
    const localBegan = performance.now();
    const local = await Promise.all(
      proxies.map(async (proxy) => {
        const answers = await Promise.all(Array.from({ length: 30 }, () => proxy.call(key)));
        return answers.filter((s) => s === 200).length;
      }),
    );
    for (const allowed of local) expect(allowed).toBeGreaterThanOrEqual(20);
    const localRefill = Math.ceil(((performance.now() - localBegan) / 1000) * rate.perSecond);
    for (const allowed of local) expect(allowed).toBeLessThanOrEqual(20 + localRefill);

    // the stream goes on while Redis is away
    await eventually(() => duringOutage > 30, 10_000, "more than thirty calls while Redis is away");
    await redis.start();
    redisDown = false;
    await dependency("shared_limits", 1, 8_000);
    // shared again: a fresh key's burst is the fleet's, not each proxy's
    const { key: fresh } = await issue(rate);
    await known(fresh);
    let allowed = 0;
    const sharedBegan = performance.now();
    for (let i = 0; i < 45; i++) if ((await (proxies[i % 3] as FleetProxy).call(fresh)) === 200) allowed += 1;
    expect(allowed).toBeGreaterThanOrEqual(20);
    const refill = Math.ceil(((performance.now() - sharedBegan) / 1000) * rate.perSecond);
    // the burst, a token of credit per proxy, and what refilled meanwhile; alone, each would allow 15
    expect(allowed).toBeLessThanOrEqual(20 + 3 + refill);
    streaming = false;
    await stream;
    expect(duringOutage).toBeGreaterThan(30);
    expect(seen.filter((s) => s !== 200)).toEqual([]);
    for (const proxy of proxies)
      expect(proxy.logs.join("\n")).toContain(
        "shared rate limits: Redis unreachable, each instance limits alone",
      );
  }, 60_000);

  it("keeps serving known keys through a PostgreSQL restart, and picks up a change made after it", async () => {
    const held = await issue();
    await known(held.key);
    expect(await statuses(held.key)).toEqual([200, 200, 200]);

    await postgres.stop();
    await dependency("account_store", 0, 2_000);
    expect(await statuses(held.key)).toEqual([200, 200, 200]);
    // the control plane cannot write meanwhile, and says so
    const signup = await request(`${controlOrigin}/v1/signup`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "during@example.com" }),
    });
    expect(signup.statusCode).toBe(503);
    expect(signup.headers["retry-after"]).toBe("5");
    expect(((await signup.body.json()) as { error: { code: string } }).error.code).toBe("STORE_UNAVAILABLE");

    await postgres.start();
    await dependency("account_store", 1, 8_000);
    // changes made after it returned reach every proxy
    const after = await issue();
    await control.service.keys.revokeAny(held.id);
    let last: number[] = [];
    for (let i = 0; i < 100; i++) {
      last = [...(await statuses(held.key)), ...(await statuses(after.key))];
      if (last.join() === "401,401,401,200,200,200") break;
      await sleep(10);
    }
    expect(last).toEqual([401, 401, 401, 200, 200, 200]);
    for (const proxy of proxies) {
      const log = proxy.logs.join("\n");
      expect(log).toContain("account store unreachable: serving the keys held");
      expect(log).toContain("account store reachable again");
    }
  }, 60_000);

  it("no key appears in any proxy's log", () => {
    const logs = proxies.flatMap((p) => p.logs).join("\n");
    expect(issued.length).toBeGreaterThan(8);
    for (const key of issued) expect(logs).not.toContain(key);
  });
});
