import { GatewayError } from "../errors/table.js";
import type { Principal } from "../keys/types.js";
import type { PlanTerms } from "./plan-terms.js";
import type { QuotaDecision, QuotaLedger, QuotaLimits } from "./quota-ledger.js";

/** Compute units reserved against a quota: settled once the answer says what the request cost. */
export class QuotaHold {
  readonly #ledger: QuotaLedger;
  readonly #scope: string;
  readonly limits: QuotaLimits;
  /** Whose quota it is: the key's own, or every key of its account on the plan (`quotaPer`). */
  readonly #per: PlanTerms["quotaPer"];
  /** What the ledger holds for the request now: the reserve, then each settlement's units. */
  #charged: number;
  /** What the request asked the quota for (a batch: all of its calls). */
  readonly #reserved: number;
  /** What a cached answer costs, as a share of its price (the plan's `cachedShare`). */
  readonly cachedShare: number;
  /**
   * When the units were taken (the ledger's take follows the construction at once): what a settle is of, and
   * the day the key's usage counts the call in (keys/usage.ts), so that a restart's quota, which starts from
   * that usage, counts it in the day its quota spent it.
   */
  readonly heldAt = Date.now();

  constructor(ledger: QuotaLedger, scope: string, principal: Principal, plan: PlanTerms, reserved: number) {
    this.#ledger = ledger;
    this.#scope = scope;
    this.#per = plan.quotaPer;
    this.limits = {
      daily: plan.dailyQuota,
      monthly: plan.monthlyQuota,
      // the key's own plan, whose keys a per-account quota counts (a removed plan's too)
      owner: { keyId: principal.keyId, accountId: principal.accountId, plan: principal.plan },
    };
    this.#charged = reserved;
    this.#reserved = reserved;
    this.cachedShare = plan.cachedShare;
  }

  /**
   * This hold, or QUOTA_EXCEEDED with the seconds until the spent period ends, the units the request needs
   * and those the quota has left: a request larger than what is left is refused whole (a batch too), though
   * smaller ones still fit.
   */
  granted(decision: QuotaDecision): QuotaHold {
    if (decision.allowed) return this;
    const retryAfter = Math.max(1, Math.ceil((decision.resetsAt - Date.now()) / 1000));
    throw new GatewayError(
      "QUOTA_EXCEEDED",
      {
        period: decision.period,
        limit: decision.limit,
        // a key that spent little is refused for what its account's other keys spent: said so
        per: this.#per,
        needed: this.#reserved,
        remaining: decision.remaining,
        resetsAt: new Date(decision.resetsAt).toISOString(),
        retryAfter,
      },
      { "retry-after": String(retryAfter) },
    );
  }

  /**
   * What the request cost in the end (0 when it was not served): the rest given back, or the excess added.
   * Settled again (a WebSocket call that waited on another's answer, then was refused when sent itself),
   * the ledger holds the last units, never a refund twice.
   */
  settle(units: number): void {
    this.#ledger.adjust(this.#scope, this.limits, units - this.#charged, this.heldAt);
    this.#charged = units;
  }
}
