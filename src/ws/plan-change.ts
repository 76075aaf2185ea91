import type { PlanBook, PlanTerms } from "../plans/plan-terms.js";

/** The close reason of a connection whose key's plan a reload changed (upgrade.ts `closeWherePlanChanged`). */
export const PLAN_CHANGED = "the API key's plan changed: connect again";

/**
 * Whether the terms a connection was admitted on differ from what its key's plan (`planName`) has now:
 * in what its messages are held to. A plan's keys and ordering (`maxKeys`, `orderable`) are the control
 * plane's, and a change of them closes no connection.
 */
export function changedPlan(
  plan: PlanTerms | undefined,
  planName: string | undefined,
  plans: PlanBook,
): boolean {
  return plan !== undefined && planName !== undefined && termsText(plan) !== termsText(plans.terms(planName));
}

/** The terms a connection's messages are held to, as one text with its members in a fixed order. */
function termsText(terms: PlanTerms): string {
  return JSON.stringify([
    terms.name,
    terms.computeUnitRate.perSecond,
    terms.computeUnitRate.burst,
    terms.dailyQuota,
    terms.monthlyQuota,
    terms.quotaPer,
    terms.dedicatedMethods,
    [...terms.disabledMethods].sort(),
    terms.archive,
    terms.cachedShare,
  ]);
}
