import { describe, expect, it } from "vitest";
import { DEFAULT_PLANS } from "../../src/config/defaults.js";
import type { PlanSpec } from "../../src/config/types.js";
import { keyView } from "../../src/control/accounts/key-view.js";
import type { KeyRecord } from "../../src/control/accounts/types.js";
import { planOffer } from "../../src/control/dashboard/catalog.js";

// A key's view carries the terms of the plan that limits it (docs/plans.md: "The dashboard shows both, each
// in its unit").

const METERED: PlanSpec = {
  ...(DEFAULT_PLANS.shared as PlanSpec),
  computeUnitRate: { perSecond: 50, burst: 100 },
  dailyQuota: 100_000,
  monthlyQuota: 0,
  quotaPer: "account",
  archive: false,
};
const PLANS = { ...DEFAULT_PLANS, metered: METERED };

const record = (plan: string): KeyRecord => ({
  id: 1,
  accountId: 1,
  prefix: "FNabcdefgh",
  plan,
  networks: ["eth"],
  archive: false,
  rate: { perSecond: 200, burst: 400 },
  status: "active",
  createdAt: 0,
  expiresAt: undefined,
  replacedBy: undefined,
  settings: {},
  quotaPrefix: "FNabcdefgh",
});

describe("a key's view and its plan's terms", () => {
  it("carries the plan's CU rate, burst, quotas, whom they count and archive", () => {
    expect(keyView(record("metered"), 1, PLANS).terms).toEqual({
      computeUnitsPerSecond: 50,
      computeUnitBurst: 100,
      dailyQuota: 100_000,
      monthlyQuota: 0,
      quotaPer: "account",
      archive: false,
    });
    const dedicated = DEFAULT_PLANS.dedicated as PlanSpec;
    expect(keyView(record("dedicated"), 1, PLANS).terms).toMatchObject({
      computeUnitsPerSecond: dedicated.computeUnitRate.perSecond,
      computeUnitBurst: dedicated.computeUnitRate.burst,
      quotaPer: "key",
      archive: true,
    });
    // its own call rate stays beside them: both limits apply
    expect(keyView(record("metered"), 1, PLANS).rate).toEqual({ perSecond: 200, burst: 400 });
  });

  it("a plan the deployment no longer has is shown on the shared plan's terms, as the proxies serve it", () => {
    const shared = DEFAULT_PLANS.shared as PlanSpec;
    expect(keyView(record("gone"), 1, PLANS).terms).toMatchObject({
      computeUnitsPerSecond: shared.computeUnitRate.perSecond,
      dailyQuota: shared.dailyQuota,
    });
    expect(keyView(record("metered"), 1).terms).toBeUndefined();
  });

  it("the catalog offers a plan with the same terms, its burst and whom its quotas count among them", () => {
    expect(planOffer("metered", METERED)).toEqual({
      name: "metered",
      ...keyView(record("metered"), 1, PLANS).terms,
      maxKeys: METERED.maxKeys,
    });
  });
});
