/** A scope's quotas in compute units: per UTC day and per calendar month; 0 is none. */
export interface QuotaLimits {
  readonly daily: number;
  readonly monthly: number;
  /** Whose quota it is: what a crossing's e-mail names. */
  readonly owner?: QuotaOwner;
}

/** The key that spent, its account and its plan. */
export interface QuotaOwner {
  readonly keyId: string;
  /** `account:<id>`, or the key's id for a key without an account. */
  readonly accountId: string;
  readonly plan: string;
}

export type QuotaPeriod = "day" | "month";

export type QuotaDecision =
  | { readonly allowed: true }
  | {
      readonly allowed: false;
      readonly period: QuotaPeriod;
      readonly limit: number;
      /** When the spent period ends, in milliseconds since the epoch: midnight UTC, or the month's first. */
      readonly resetsAt: number;
      /** The units that period's quota had left for the call, as this process knows it (0: none, it is spent). */
      readonly remaining: number;
    };

/** A quota's threshold passed: the period it is in (`2026-11-26`, `2026-11`) and the share reached. */
export interface QuotaCrossing {
  readonly scope: string;
  readonly period: QuotaPeriod;
  readonly periodId: string;
  readonly threshold: 80 | 100;
  readonly limit: number;
  /** When the period ends, in milliseconds since the epoch. */
  readonly resetsAt: number;
  readonly owner: QuotaOwner | undefined;
}

/**
 * Compute units spent per scope (a key's id, or an account's) against its quotas. `take` reserves a
 * call's price before it goes upstream and answers at once when it can, or later when it must ask a shared
 * store; `adjust` gives back what was reserved and not spent, or adds what the answer cost beyond it.
 */
export interface QuotaLedger {
  /** `ratePerSecond`: the scope's compute-unit rate, which sizes what a shared ledger leases at a time. */
  take(
    scope: string,
    limits: QuotaLimits,
    cost: number,
    ratePerSecond?: number,
  ): QuotaDecision | Promise<QuotaDecision>;
  /**
   * `heldAt`: when the units were taken (milliseconds since the epoch). The difference is the day's and the
   * month's the units were held in, not those current when the answer came: see `QuotaClock.periodOf`.
   */
  adjust(scope: string, limits: QuotaLimits, delta: number, heldAt: number): void;
  close(): Promise<void>;
}

export const ALLOWED: QuotaDecision = { allowed: true };

/**
 * What a quota's scope spent in a day and in that day's month, as the account store's usage counts hold it
 * (keys/usage.ts): what a shared ledger's counters start from when Redis lost them, and a count in this
 * process from where it has none (store-started.ts).
 */
export interface QuotaSpentSource {
  /** `day` is `YYYY-MM-DD`; the month is the one it is in. */
  spent(scope: string, day: string): Promise<{ readonly day: number; readonly month: number }>;
}

/**
 * A quota's scope as the account store names its keys (pipeline/stages.ts makes it): an account's keys of
 * one plan (`account:<id>:<plan>`), or a line of keys rotated from one, by the first one's prefix.
 */
export function scopeKeys(
  scope: string,
): { readonly accountId: number; readonly plan: string } | { readonly prefix: string } {
  const account = /^account:(\d+):(.+)$/.exec(scope);
  return account === null ? { prefix: scope } : { accountId: Number(account[1]), plan: account[2] as string };
}

/** The shares of a quota whose passing is announced (an e-mail each, once per period). */
const THRESHOLDS = [80, 100] as const;

/** Whether `before` → `after` reaches `threshold` % of `limit` from below. */
function passesMark(limit: number, threshold: number, before: number, after: number): boolean {
  const at = (limit * threshold) / 100;
  return before < at && after >= at;
}

/** The UTC day and month a moment falls in, and when each ends. */
export class QuotaClock {
  day = "";
  month = "";
  dayStartsAt = 0;
  dayEndsAt = 0;
  monthStartsAt = 0;
  monthEndsAt = 0;
  readonly #now: () => number;
  /**
   * Each scope's quota sizes when its last crossing was announced, this month: a quota resized within its
   * period (a reload) is crossed again from its start, 80 % and 100 % of its new size (each size's notices
   * once: quota-notices.ts), though what was spent may be past 80 % of it already.
   */
  readonly #sizes = new Map<string, { daily: number; monthly: number }>();

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Brings the periods up to now; true when one turned. */
  tick(): boolean {
    const now = this.#now();
    if (now < this.dayEndsAt) return false;
    const date = new Date(now);
    this.day = date.toISOString().slice(0, 10);
    if (this.day.slice(0, 7) !== this.month) this.#sizes.clear();
    this.month = this.day.slice(0, 7);
    this.dayStartsAt = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate());
    this.dayEndsAt = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1);
    this.monthStartsAt = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
    this.monthEndsAt = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
    return true;
  }

  /**
   * Which of the periods as last ticked the moment `at` falls in: "day" (this day, so this month too),
   * "month" (an earlier day of this month) or "ended" (an earlier month).
   */
  periodOf(at: number): "day" | "month" | "ended" {
    if (at >= this.dayStartsAt) return "day";
    return at >= this.monthStartsAt ? "month" : "ended";
  }

  /** What refuses `cost` on top of `day` and `month` spent, else ALLOWED. */
  decide(limits: QuotaLimits, day: number, month: number, cost: number): QuotaDecision {
    if (limits.monthly > 0 && month + cost > limits.monthly)
      return {
        allowed: false,
        period: "month",
        limit: limits.monthly,
        resetsAt: this.monthEndsAt,
        remaining: Math.max(0, limits.monthly - month),
      };
    if (limits.daily > 0 && day + cost > limits.daily)
      return {
        allowed: false,
        period: "day",
        limit: limits.daily,
        resetsAt: this.dayEndsAt,
        remaining: Math.max(0, limits.daily - day),
      };
    return ALLOWED;
  }

  /** A refusal as the 100 % crossing: the call that finds a quota spent marks it when none landed on it. */
  spentCrossing(scope: string, limits: QuotaLimits, decision: QuotaDecision): QuotaCrossing {
    const refused = decision as Extract<QuotaDecision, { allowed: false }>;
    return {
      scope,
      period: refused.period,
      periodId: refused.period === "day" ? this.day : this.month,
      threshold: 100,
      limit: refused.limit,
      resetsAt: refused.resetsAt,
      owner: limits.owner,
    };
  }

  /** Whether a quota of `scope` has another size than when it was last counted; its first count notes it. */
  resized(scope: string, limits: QuotaLimits): boolean {
    const sizes = this.#sizes.get(scope);
    if (sizes === undefined) this.#sizes.set(scope, { daily: limits.daily, monthly: limits.monthly });
    return sizes !== undefined && (sizes.daily !== limits.daily || sizes.monthly !== limits.monthly);
  }

  /** The thresholds `before` → `after` passed, for each quota, as crossings to announce. */
  crossings(
    scope: string,
    limits: QuotaLimits,
    spent: { readonly day: [number, number]; readonly month: [number, number] },
  ): QuotaCrossing[] {
    const out: QuotaCrossing[] = [];
    const sizes = this.#sizes.get(scope);
    this.#sizes.set(scope, { daily: limits.daily, monthly: limits.monthly });
    const check = (period: QuotaPeriod, limit: number, [spentBefore, after]: [number, number]) => {
      if (limit <= 0) return;
      // resized since its last crossing: counted from the period's start against the new size
      const was = period === "day" ? sizes?.daily : sizes?.monthly;
      const before = was !== undefined && was !== limit ? 0 : spentBefore;
      const periodId = period === "day" ? this.day : this.month;
      const resetsAt = period === "day" ? this.dayEndsAt : this.monthEndsAt;
      for (const threshold of THRESHOLDS)
        if (passesMark(limit, threshold, before, after))
          out.push({ scope, period, periodId, threshold, limit, resetsAt, owner: limits.owner });
    };
    check("day", limits.daily, spent.day);
    check("month", limits.monthly, spent.month);
    return out;
  }
}

/** Whether `before` → `after` passes a threshold of `limit` (0: no quota). */
function passes(limit: number, before: number, after: number): boolean {
  if (limit <= 0) return false;
  for (const threshold of THRESHOLDS) if (passesMark(limit, threshold, before, after)) return true;
  return false;
}

interface Spent {
  day: string;
  dayUnits: number;
  month: string;
  monthUnits: number;
}

/**
 * Quotas counted in this process alone, exactly, from zero: what a scope spent before its count here began
 * (a restart, a reload that moved a plan's keys to another scope) is added by StoreStartedLedger
 * (store-started.ts). Without Redis, each worker and instance counts its own (docs/plans.md, "Many
 * instances").
 */
export class LocalQuotaLedger implements QuotaLedger {
  readonly #spent = new Map<string, Spent>();
  readonly #clock: QuotaClock;
  readonly #crossed: (crossing: QuotaCrossing) => void;

  constructor(crossed: (crossing: QuotaCrossing) => void = () => {}, now: () => number = Date.now) {
    this.#clock = new QuotaClock(now);
    this.#crossed = crossed;
  }

  take(scope: string, limits: QuotaLimits, cost: number): QuotaDecision {
    const spent = this.#spentOf(scope);
    const decision = this.#clock.decide(limits, spent.dayUnits, spent.monthUnits, cost);
    if (!decision.allowed) {
      // the call that finds the quota spent is the 100 % mark when no call landed on it exactly
      this.#crossed(this.#clock.spentCrossing(scope, limits, decision));
      return decision;
    }
    this.#add(scope, spent, limits, cost, cost);
    return decision;
  }

  /**
   * A settle's difference counts in the periods the units were held in (docs/plans.md: the CU of what was
   * served, in fixed UTC periods): a call held before midnight and given back after it was never spent from
   * the new day, so its refund must not make room there. Of an ended period only its counter could take the
   * difference, and this ledger forgets a day's (and a month's) counter when it ends: the difference, a
   * refund or an extra charge alike, is dropped for it, while the month still counts it when the day held
   * in was this month's.
   */
  adjust(scope: string, limits: QuotaLimits, delta: number, heldAt: number): void {
    if (delta === 0) return;
    const spent = this.#spentOf(scope);
    const held = this.#clock.periodOf(heldAt);
    if (held === "ended") return;
    this.#add(scope, spent, limits, held === "day" ? delta : 0, delta);
  }

  /** What `scope` spent today and this month, as this process counted it. */
  spent(scope: string): { readonly day: number; readonly month: number } {
    const spent = this.#spentOf(scope);
    return { day: spent.dayUnits, month: spent.monthUnits };
  }

  /** Whether `scope` is counted here this month (a count started, or a call taken). */
  counts(scope: string): boolean {
    if (this.#clock.tick()) this.#forgetEnded();
    return this.#spent.has(scope);
  }

  /** The UTC day counted now, `YYYY-MM-DD`. */
  today(): string {
    if (this.#clock.tick()) this.#forgetEnded();
    return this.#clock.day;
  }

  /** Adds what another count said `scope` had spent before this one began (no crossing is announced). */
  startAt(scope: string, day: number, month: number): void {
    const spent = this.#spentOf(scope);
    spent.dayUnits += day;
    spent.monthUnits += month;
  }

  /** The scopes counted this month, and the day each was last counted in. */
  *scopes(): IterableIterator<
    [string, { readonly day: string; readonly dayUnits: number; readonly monthUnits: number }]
  > {
    for (const [scope, spent] of this.#spent) yield [scope, spent];
  }

  async close(): Promise<void> {}

  /** Adds `dayDelta` to the day's count and `monthDelta` to the month's, announcing what they cross. */
  #add(scope: string, spent: Spent, limits: QuotaLimits, dayDelta: number, monthDelta: number): void {
    const dayBefore = spent.dayUnits;
    const monthBefore = spent.monthUnits;
    spent.dayUnits = Math.max(0, dayBefore + dayDelta);
    spent.monthUnits = Math.max(0, monthBefore + monthDelta);
    // every call passes here: the crossings' lists are made only when a threshold is passed
    if (
      monthDelta > 0 &&
      (passes(limits.daily, dayBefore, spent.dayUnits) ||
        passes(limits.monthly, monthBefore, spent.monthUnits) ||
        this.#clock.resized(scope, limits))
    ) {
      const day: [number, number] = [dayBefore, spent.dayUnits];
      const month: [number, number] = [monthBefore, spent.monthUnits];
      for (const crossing of this.#clock.crossings(scope, limits, { day, month })) this.#crossed(crossing);
    }
  }

  #spentOf(scope: string): Spent {
    const clock = this.#clock;
    if (clock.tick()) this.#forgetEnded();
    let spent = this.#spent.get(scope);
    if (spent === undefined) {
      spent = { day: clock.day, dayUnits: 0, month: clock.month, monthUnits: 0 };
      this.#spent.set(scope, spent);
    }
    return spent;
  }

  /** A day turned: every scope's day starts at 0, and a month that ended too. */
  #forgetEnded(): void {
    const { day, month } = this.#clock;
    for (const [scope, spent] of this.#spent) {
      if (spent.month !== month) this.#spent.delete(scope);
      else if (spent.day !== day) {
        spent.day = day;
        spent.dayUnits = 0;
      }
    }
  }
}
