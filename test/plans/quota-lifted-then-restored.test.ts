import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { DEFAULT_PLANS, PLAN_FIELDS } from "../../src/config/defaults.js";
import type { GatewayConfig, PlanSpec } from "../../src/config/types.js";
import { createLogger } from "../../src/log.js";
import type { QuotaLedger } from "../../src/plans/quota-ledger.js";
import { SharedQuotaLedger } from "../../src/plans/shared-quotas.js";
import { eventually } from "../support/eventually.js";
import { rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, startLoopbackNode } from "../support/loopback-node.js";
import { needServices, SHARED_REDIS_URL } from "../support/services.js";

// An operator lifts a plan's daily quota by a reload (a promotion, an incident) and puts it back the same
// day (docs/plans.md): what the plan's keys spent meanwhile is spent. The ledger counted nothing for a plan
// without a quota and carried on from its old count once the quota returned, so a key that had spent its
// day twice over was served its whole quota again.

const plan = (fields: Partial<PlanSpec>): PlanSpec => ({
  ...PLAN_FIELDS,
  computeUnitRate: { perSecond: 1_000_000, burst: 1_000_000 },
  ...fields,
});
const RATE = { perSecond: 10_000, burst: 10_000 };
const redis = await needServices("redis");

/** eth_blockNumber costs 10 units (docs/compute-units.md): a 100-unit day is ten calls. */
async function liftedThenRestored(key: string, quotas?: QuotaLedger): Promise<void> {
  const node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
  const plans = (dailyQuota: number) => ({ ...DEFAULT_PLANS, promo: plan({ dailyQuota }) });
  const gw = await startGateway({
    upstreams: { eth: [node.url] },
    plans: plans(100),
    keys: [{ key, networks: "*", plan: "promo", rate: RATE }],
    ...(quotas === undefined ? {} : { quotas }),
  });
  const send = async () => (await gw.call("eth", `/${key}`, { body: rpcBody("eth_blockNumber") })).status;
  try {
    for (let i = 0; i < 4; i++) expect(await send()).toBe(200);
    gw.gateway.reload({ ...gw.config, plans: plans(0) } as GatewayConfig, gw.keys);
    // the quota lifted: 80 units more, 120 in the day
    for (let i = 0; i < 8; i++) expect(await send()).toBe(200);
    gw.gateway.reload({ ...gw.config, plans: plans(100) } as GatewayConfig, gw.keys);
    expect(await send()).toBe(402);
  } finally {
    await gw.close();
    await node.close();
  }
}

describe("a daily quota lifted by a reload and put back the same day", () => {
  it("counts what was spent meanwhile (one proxy)", async () => {
    await liftedThenRestored("FNliftedLocal0000000000000000");
  });

  it.skipIf(redis.skip)("counts what was spent meanwhile (quotas shared through Redis)", async () => {
    const quotas = new SharedQuotaLedger(
      { redis: SHARED_REDIS_URL, leaseMs: 1, fallbackShare: 1 },
      createLogger("silent"),
      () => {},
    );
    try {
      await eventually(() => quotas.shared, 2_000, "Redis reached");
      // a key id of its own (its first eight characters): counters new, whatever ran before
      await liftedThenRestored(`FN${randomBytes(3).toString("hex")}liftedShared000000000`, quotas);
    } finally {
      await quotas.close();
    }
  });
});
