import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PLANS, PLAN_FIELDS } from "../../src/config/defaults.js";
import type { PlanSpec } from "../../src/config/types.js";
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
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { outboxMails } from "../support/outbox.js";
import {
  needOwnServerBinaries,
  type OwnPostgres,
  type OwnRedis,
  startOwnPostgres,
  startOwnRedis,
} from "../support/own-servers.js";

// Compute units and quotas across three proxy processes and a control plane sharing one PostgreSQL and one
// Redis (docs/plans.md): what each key spent is counted once whichever proxy served it, a quota holds for the
// three together, and its e-mails are sent once each. The servers are this suite's own.

const binaries = needOwnServerBinaries("postgres", "redis");

/** A call and what the registry prices it at (docs/compute-units.md). */
interface Priced {
  readonly body: string;
  readonly units: number;
}
const rpc = (method: string, params: unknown[] = [], id = 1) => ({ jsonrpc: "2.0", id, method, params });
const ZERO = "0x0000000000000000000000000000000000000000";
const MIX: readonly Priced[] = [
  { body: JSON.stringify(rpc("eth_blockNumber")), units: 10 },
  { body: JSON.stringify(rpc("eth_getLogs", [{ fromBlock: "0x1", toBlock: "0x2" }])), units: 75 },
  { body: JSON.stringify(rpc("eth_chainId")), units: 5 },
  { body: JSON.stringify(rpc("eth_call", [{ to: ZERO }, "latest"])), units: 26 },
  { body: JSON.stringify(rpc("eth_getBalance", [ZERO, "latest"])), units: 20 },
  // a batch costs the sum of its calls
  { body: JSON.stringify([rpc("eth_blockNumber", [], 1), rpc("eth_chainId", [], 2)]), units: 15 },
  // a method the registry does not serve is refused by the gateway, and costs nothing
  { body: JSON.stringify(rpc("admin_peers")), units: 0 },
];
const QUOTA = 1_000;
/** What the deployment changes in the shipped plans and adds: the load's rate, and a plan with a quota. */
const PLANS_ADDED = {
  shared: { computeUnitRate: { perSecond: 100_000, burst: 100_000 } },
  metered: { computeUnitRate: { perSecond: 1_000, burst: 100_000 }, dailyQuota: QUOTA },
};

describe.skipIf(binaries.skip)("plans across three proxies on PostgreSQL and Redis", () => {
  let postgres: OwnPostgres;
  let redis: OwnRedis;
  let node: LoopbackNode;
  let control: ControlPlane;
  let accountId = 0;
  let dir = "";
  const proxies: FleetProxy[] = [];

  const post = async (proxy: FleetProxy, key: string, body: string) => {
    const answer = await request(`http://127.0.0.1:${proxy.port}/${key}`, {
      method: "POST",
      headers: { host: `eth.${FLEET_DOMAIN}`, "content-type": "application/json" },
      body,
    });
    return { status: answer.statusCode, headers: answer.headers, text: await answer.body.text() };
  };
  const issue = async (plan: string) => {
    const { key } = await control.service.keys.issue(accountId, { networks: ["eth"], plan });
    await eventually(
      async () => (await Promise.all(proxies.map((p) => p.knows(key)))).every(Boolean),
      5_000,
      "the key known to the three",
    );
    return key;
  };
  const unitsOf = async (prefix: string) => {
    const today = new Date().toISOString().slice(0, 10);
    const rows = await control.store.usage([prefix], today, today);
    return rows.reduce((sum, row) => sum + row.units, 0);
  };

  beforeAll(async () => {
    await Promise.all([
      startOwnPostgres().then((started) => {
        postgres = started;
      }),
      startOwnRedis().then((started) => {
        redis = started;
      }),
      startLoopbackNode(
        jsonRpcResponder({
          eth_blockNumber: "0x2a",
          eth_chainId: "0x1",
          eth_getLogs: [],
          eth_call: "0x",
          eth_getBalance: "0x0",
        }),
      ).then((started) => {
        node = started;
      }),
    ]);
    dir = mkdtempSync(join(tmpdir(), "plans-fleet-"));
    // the control plane and the proxies read one deployment's plans, as they would from one config file
    control = await startFleetControlPlane(postgres.url, dir, undefined, {
      ...DEFAULT_PLANS,
      shared: { ...(DEFAULT_PLANS.shared as PlanSpec), ...PLANS_ADDED.shared },
      metered: { ...PLAN_FIELDS, ...PLANS_ADDED.metered },
    });
    accountId = (await control.service.admin.createAccount("plans@example.com")).id;
    const config = writeFleetConfig(dir, {
      database: postgres.url,
      redis: redis.url,
      upstream: node.url,
      extra: [`plans: ${JSON.stringify(PLANS_ADDED)}`],
    });
    await Promise.all([0, 1, 2].map(async () => proxies.push(await startFleetProxy(config))));
  }, 60_000);
  afterAll(async () => {
    await Promise.all(proxies.map(stopFleetProxy));
    await control?.close();
    await Promise.all([postgres?.close(), redis?.close(), node?.close()]);
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  it("counts each key's compute units once, whichever proxy served each call, to the hand-computed sum", async () => {
    const key = await issue("shared");
    let expected = 0;
    for (let round = 0; round < 4; round++)
      for (const [i, call] of MIX.entries()) {
        const proxy = proxies[(round + i) % 3] as FleetProxy;
        const answer = await post(proxy, key, call.body);
        expect(answer.status, answer.text).toBe(call.units === 0 ? 403 : 200);
        expected += call.units;
      }
    expect(expected).toBe(4 * 151);
    // each proxy flushes every 500 ms; the store adds their rows
    await eventually(async () => (await unitsOf(key.slice(0, 10))) === expected, 5_000, "the units flushed");
    // and per method, for the dashboard's overview: eth_getLogs 4 calls of 75, the refusals by their code
    const today = new Date().toISOString().slice(0, 10);
    await eventually(
      async () => {
        const methods = await control.store.usageMethods([key.slice(0, 10)], today, today);
        const logs = methods.find((m) => m.method === "eth_getLogs");
        return logs?.calls === 4 && logs.units === 300 && logs.latency.reduce((a, b) => a + b, 0) === 4;
      },
      5_000,
      "the per-method rows flushed",
    );
    // each proxy flushes on its own: the refusals of all three are in once every one has flushed
    await eventually(
      async () => {
        const codes = await control.store.usageCodes([key.slice(0, 10)], today, today);
        return codes.find((c) => c.code === "METHOD_NOT_FOUND")?.count === 4;
      },
      5_000,
      "the four refusals flushed, by their code",
    );
  });

  it("holds a quota for the three together: never past it, and the e-mails at 80 % and 100 % once each", async () => {
    const key = await issue("metered");
    let spent = 0;
    let refused: Awaited<ReturnType<typeof post>> | undefined;
    const priced = MIX.filter((call) => call.units > 0);
    for (let i = 0; i < 200 && refused === undefined; i++) {
      const call = priced[i % priced.length] as Priced;
      const answer = await post(proxies[i % 3] as FleetProxy, key, call.body);
      if (answer.status === 402) refused = answer;
      else {
        expect(answer.status, answer.text).toBe(200);
        spent += call.units;
      }
    }
    expect(refused, "no call refused").toBeDefined();
    expect(JSON.parse(refused?.text ?? "{}").error.data).toMatchObject({
      code: "QUOTA_EXCEEDED",
      period: "day",
    });
    expect(Number(refused?.headers["retry-after"])).toBeGreaterThan(0);
    // the other two may still spend what they leased; then every proxy refuses it
    for (const proxy of proxies)
      for (let i = 0; ; i++) {
        const answer = await post(proxy, key, MIX[0]?.body ?? "");
        if (answer.status === 402) break;
        expect(answer.status).toBe(200);
        spent += 10;
        expect(i).toBeLessThan(20);
      }
    // never past the quota, and at most a few calls' worth short of it
    expect(spent).toBeLessThanOrEqual(QUOTA);
    expect(spent).toBeGreaterThan(QUOTA - 3 * 75);
    await eventually(async () => (await unitsOf(key.slice(0, 10))) === spent, 5_000, "the units flushed");

    const prefix = key.slice(0, 10);
    const mails = () => outboxMails(join(dir, "outbox")).filter((m) => m.body.includes(prefix));
    await eventually(async () => mails().length === 2, 5_000, "the two quota e-mails");
    // nothing more comes: each was written once by the three proxies and sent once
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const sent = mails();
    expect(sent).toHaveLength(2);
    expect(sent.every((m) => m.to.includes("plans@example.com"))).toBe(true);
    expect(sent.some((m) => m.body.includes("used 80% of the daily quota"))).toBe(true);
    expect(
      sent.some((m) =>
        m.body.includes("is reached: calls that cost more than what is left of it are refused with HTTP 402"),
      ),
    ).toBe(true);
    expect(sent.every((m) => !m.body.includes(key))).toBe(true);
  });
});
