import type { PlanSpec } from "../../config/types.js";
import type { Plan } from "../../keys/types.js";
import { reachesArchive } from "../../plans/plan-terms.js";
import type { KeyRecord } from "./types.js";

/**
 * A plan's terms as a customer reads them (docs/plans.md): its compute-unit rate with its burst, its quotas
 * (0: none) and whom they count, and whether a key ordered on it reaches archive nodes.
 */
export interface PlanTermsView {
  readonly computeUnitsPerSecond: number;
  readonly computeUnitBurst: number;
  /** Compute units a UTC day and a calendar month; 0: no quota. */
  readonly dailyQuota: number;
  readonly monthlyQuota: number;
  /** `key`: each key spends its own quotas; `account`: every key of the account on the plan spends one. */
  readonly quotaPer: "key" | "account";
  /** Whether a key ordered on it reaches archive nodes (src/control/accounts/keys.ts `order`). */
  readonly archive: boolean;
}

/** A plan's spec as its terms. */
export function planTermsView(plan: PlanSpec): PlanTermsView {
  return {
    computeUnitsPerSecond: plan.computeUnitRate.perSecond,
    computeUnitBurst: plan.computeUnitRate.burst,
    dailyQuota: plan.dailyQuota,
    monthlyQuota: plan.monthlyQuota,
    quotaPer: plan.quotaPer,
    archive: plan.archive !== false,
  };
}

/** A key as its owner sees it in a listing: never the key itself. */
export interface KeyView {
  readonly id: number;
  readonly prefix: string;
  readonly plan: Plan;
  readonly networks: readonly string[] | "*";
  /** Whether it reaches archive labels: its grant, as its plan allows when the view is made with the plans. */
  readonly archive: boolean;
  readonly status: "active" | "expired" | "revoked";
  readonly createdAt: string;
  readonly expiresAt: string | undefined;
  readonly replacedBy: number | undefined;
  /** Its own rate limit, in calls; undefined for the gateway's default (`defaultRate`). */
  readonly rate: KeyRecord["rate"];
  /**
   * The terms of the plan it is served on, which limit it beside its call rate: its plan's, or the shared
   * plan's for a plan the deployment no longer has (as the proxies serve it, src/plans/plan-terms.ts).
   * Present when the view is made with the deployment's plans.
   */
  readonly terms?: PlanTermsView;
  /** What its owner restricted it to (docs/plans.md, "Key settings"); `{}` for nothing. */
  readonly settings: KeyRecord["settings"];
}

export function keyView(key: KeyRecord, now: number, plans?: Readonly<Record<string, PlanSpec>>): KeyView {
  const plan = plans === undefined ? undefined : (plans[key.plan] ?? plans.shared);
  return {
    id: key.id,
    prefix: key.prefix,
    plan: key.plan,
    networks: key.networks,
    archive: plan === undefined ? key.archive : reachesArchive(plan.archive, key.archive),
    status: keyStatus(key, now),
    createdAt: new Date(key.createdAt).toISOString(),
    expiresAt: key.expiresAt === undefined ? undefined : new Date(key.expiresAt).toISOString(),
    replacedBy: key.replacedBy,
    rate: key.rate,
    ...(plan === undefined ? {} : { terms: planTermsView(plan) }),
    settings: key.settings,
  };
}

/** The store keeps only "revoked"; a key past its expiry is "expired" from that moment, without a job. */
export function keyStatus(key: KeyRecord, now: number): KeyView["status"] {
  if (key.status === "revoked") return "revoked";
  return key.expiresAt !== undefined && key.expiresAt <= now ? "expired" : "active";
}
