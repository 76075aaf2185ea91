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
import { outboxMails } from "../support/outbox.js";
import { needOwnServerBinaries, type OwnPostgres, startOwnPostgres } from "../support/own-servers.js";

// A quota's 80 % and 100 % e-mails (docs/plans.md: "at 80 % and at 100 % of each quota, once per period")
// when the key crosses them while PostgreSQL is down: the proxy keeps serving (docs/deployment.md), and the
// crossings it could not write then must still reach the control plane once the store is back. This suite's
// own PostgreSQL (it stops and starts it), one proxy process without Redis.

const binaries = needOwnServerBinaries("postgres");

/** Ten eth_blockNumber calls of 10 compute units each. */
const QUOTA = 100;
const PLANS = { metered: { computeUnitRate: { perSecond: 1_000, burst: 1_000 }, dailyQuota: QUOTA } };

describe.skipIf(binaries.skip)("quota e-mails for crossings made while PostgreSQL is down", () => {
  let postgres: OwnPostgres;
  let node: LoopbackNode;
  let control: ControlPlane;
  let proxy: FleetProxy;
  let dir = "";

  beforeAll(async () => {
    [postgres, node] = await Promise.all([
      startOwnPostgres(),
      startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a" })),
    ]);
    dir = mkdtempSync(join(tmpdir(), "notice-outage-"));
    control = await startFleetControlPlane(postgres.url, dir, undefined, {
      ...DEFAULT_PLANS,
      metered: { ...PLAN_FIELDS, ...PLANS.metered },
    });
    proxy = await startFleetProxy(
      writeFleetConfig(dir, {
        database: postgres.url,
        upstream: node.url,
        extra: [`plans: ${JSON.stringify(PLANS)}`],
      }),
    );
  }, 60_000);

  afterAll(async () => {
    if (proxy !== undefined) await stopFleetProxy(proxy);
    await control?.close();
    await Promise.all([postgres?.close(), node?.close()]);
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  it("sends the 80 % and 100 % e-mails once the store is back", async () => {
    const accountId = (await control.service.admin.createAccount("crossed@example.com")).id;
    const { key } = await control.service.keys.issue(accountId, { networks: ["eth"], plan: "metered" });
    const prefix = key.slice(0, 10);
    await eventually(() => proxy.knows(key), 5_000, "the key known");
    for (let i = 0; i < 7; i++) expect(await proxy.call(key)).toBe(200);

    await postgres.stop();
    await eventually(async () => (await proxy.dependencyUp("account_store")) === 0, 10_000, "store down");
    // the 8th call takes the day to 80 %, the 10th to 100 %: the customer makes no call after it
    for (let i = 0; i < 3; i++) expect(await proxy.call(key)).toBe(200);
    await eventually(
      () => proxy.logs.filter((line) => line.includes('"msg":"quota notice not written"')).length >= 2,
      10_000,
      "both crossings' writes failed",
    );
    await postgres.start();
    await eventually(async () => (await proxy.dependencyUp("account_store")) === 1, 10_000, "store up");

    const mails = () => outboxMails(join(dir, "outbox")).filter((m) => m.body.includes(prefix));
    await eventually(() => mails().length >= 2, 10_000, "the two e-mails");
    const bodies = mails().map((m) => m.body);
    expect(bodies.filter((b) => b.includes("used 80% of the daily quota"))).toHaveLength(1);
    expect(bodies.filter((b) => b.includes("is reached"))).toHaveLength(1);
  }, 90_000);
});
