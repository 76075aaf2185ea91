import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PLANS, PLAN_FIELDS } from "../../src/config/defaults.js";
import type { Account } from "../../src/control/accounts/types.js";
import type { ControlPlane } from "../../src/control/plane.js";
import { eventually } from "../support/eventually.js";
import {
  FLEET_DOMAIN,
  type FleetProxy,
  startFleetControlPlane,
  startFleetProxy,
  stopFleetProxy,
  writeFleetConfig,
} from "../support/fleet.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { freshPostgresDatabase, needServices, SHARED_REDIS_URL } from "../support/services.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

const services = await needServices("postgres", "redis");
const RATE = { perSecond: 100_000, burst: 100_000 };
type Plans = Record<string, Record<string, unknown>>;
const FIRST: Plans = {
  shared: { computeUnitRate: RATE },
  team: { computeUnitRate: RATE, dailyQuota: 100_000 },
  grow: { computeUnitRate: RATE, dailyQuota: 1_000 },
};

describe.skipIf(services.skip)("plans changed by a reload of three proxies", () => {
  let db: { url: string; drop(): Promise<void> };
  let node: LoopbackWsNode;
  let control: ControlPlane;
  let account: Account;
  let dir = "";
  let restore = () => {};
  let config = "";
  const proxies: FleetProxy[] = [];

  const post = async (proxy: FleetProxy, key: string, method: string) => {
    const answer = await request(`http://127.0.0.1:${proxy.port}/${key}`, {
      method: "POST",
      headers: { host: `eth.${FLEET_DOMAIN}`, "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: [] }),
    });
    return { status: answer.statusCode, text: await answer.body.text() };
  };
  const issue = async (plan: string) => {
    const { key, view } = await control.service.keys.issue(account.id, { networks: ["eth"], plan });
    await eventually(
      async () => (await Promise.all(proxies.map((p) => p.knows(key)))).every(Boolean),
      5_000,
      "known",
    );
    return { key, id: view.id };
  };
  const write = (plans: Plans) =>
    writeFleetConfig(dir, {
      database: db.url,
      redis: `${SHARED_REDIS_URL}/11`,
      upstream: node.url,
      extra: [`plans: ${JSON.stringify(plans)}`],
    });
  const reload = async (plans: Plans) => {
    write(plans);
    const before = proxies.map((p) => p.logs.filter((l) => l.includes('"msg":"config reloaded"')).length);
    for (const proxy of proxies) proxy.child.kill("SIGHUP");
    await eventually(
      () =>
        proxies.every(
          (p, i) => p.logs.filter((l) => l.includes('"msg":"config reloaded"')).length > (before[i] ?? 0),
        ),
      5_000,
      "reloaded by the three",
    );
  };
  const unitsOf = async (prefixes: string[]) => {
    const today = new Date().toISOString().slice(0, 10);
    return (await control.store.usage(prefixes, today, today)).reduce((sum, row) => sum + row.units, 0);
  };

  beforeAll(async () => {
    restore = resolveTestHosts();
    db = await freshPostgresDatabase();
    // a fresh database numbers its accounts from 1 again: the quota counters of an earlier run's go
    const redis = new Redis(`${SHARED_REDIS_URL}/11`);
    await redis.flushdb();
    await redis.quit();
    node = await startLoopbackWsNode(evmNode());
    dir = mkdtempSync(join(tmpdir(), "plan-reload-fleet-"));
    control = await startFleetControlPlane(db.url, dir, undefined, {
      ...DEFAULT_PLANS,
      team: { ...PLAN_FIELDS, ...FIRST.team } as never,
      grow: { ...PLAN_FIELDS, ...FIRST.grow } as never,
    });
    account = await control.service.admin.createAccount("reload@example.com");
    config = write(FIRST);
    await Promise.all([0, 1, 2].map(async () => proxies.push(await startFleetProxy(config))));
  }, 60_000);
  afterAll(async () => {
    await Promise.all(proxies.map(stopFleetProxy));
    await control?.close();
    await node?.close();
    await db?.drop();
    restore();
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  it("a method taken off the plan and the quota lowered below what was spent: every proxy, HTTP and sockets", async () => {
    const { key } = await issue("team");
    const sockets = await Promise.all(
      proxies.map((p) => Client.open(`ws://eth.${FLEET_DOMAIN}:${p.port}/${key}`)),
    );
    for (const s of sockets) expect((await s.call("eth_chainId")).result).toBe("0x1");
    // 300 units over the three
    for (let i = 0; i < 30; i++)
      expect((await post(proxies[i % 3] as FleetProxy, key, "eth_blockNumber")).status).toBe(200);
    await reload({ ...FIRST, team: { ...FIRST.team, disabledMethods: ["eth_chainId"], dailyQuota: 200 } });
    for (const s of sockets) expect((await s.closed).code).toBe(1008);
    for (const proxy of proxies) {
      expect((await post(proxy, key, "eth_chainId")).status).toBe(403);
      expect((await post(proxy, key, "eth_blockNumber")).status).toBe(402);
    }
  });

  it("quotaPer key to account: the account's keys start from what they spent", async () => {
    const a = await issue("grow");
    const b = await issue("grow");
    for (let i = 0; i < 50; i++)
      expect((await post(proxies[i % 3] as FleetProxy, a.key, "eth_blockNumber")).status).toBe(200);
    for (let i = 0; i < 30; i++)
      expect((await post(proxies[i % 3] as FleetProxy, b.key, "eth_blockNumber")).status).toBe(200);
    await eventually(
      async () => (await unitsOf([a.key.slice(0, 10), b.key.slice(0, 10)])) === 800,
      5_000,
      "flushed",
    );
    await reload({ ...FIRST, grow: { ...FIRST.grow, quotaPer: "account" } });
    let served = 0;
    for (let i = 0; i < 60; i++) {
      const answer = await post(proxies[i % 3] as FleetProxy, (i % 2 === 0 ? a : b).key, "eth_blockNumber");
      if (answer.status === 200) served += 10;
      else expect(answer.status, answer.text).toBe(402);
    }
    expect(served).toBeLessThanOrEqual(200);
  });
});
