import { Redis } from "ioredis";
import type { SharedLimitsConfig } from "../config/types.js";
import { redisReady, sharedRedisOptions } from "../limits/redis-options.js";
import type { Logger } from "../log.js";
import {
  ALLOWED,
  LocalQuotaLedger,
  QuotaClock,
  type QuotaCrossing,
  type QuotaDecision,
  type QuotaLedger,
  type QuotaLimits,
  type QuotaSpentSource,
} from "./quota-ledger.js";

// A scope's day and month counters in Redis, moved together: it grants what fits under both quotas, at most
// ARGV[4] and never less than ARGV[3] (else nothing), and a quarter of what is left once little is, so the
// leases instances hold near the end are small. Answers the grant, both counters after it, and whether each
// counter was not there before (1): a new day's, or one Redis lost.
const LEASE_SCRIPT = `
local dayNew = redis.call('EXISTS', KEYS[1]) == 0 and 1 or 0
local monthNew = redis.call('EXISTS', KEYS[2]) == 0 and 1 or 0
local day = tonumber(redis.call('GET', KEYS[1]) or '0')
local month = tonumber(redis.call('GET', KEYS[2]) or '0')
local daily = tonumber(ARGV[1])
local monthly = tonumber(ARGV[2])
local need = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local left = want * 4
if daily > 0 then left = math.min(left, daily - day) end
if monthly > 0 then left = math.min(left, monthly - month) end
if left < need then return {0, day, month, dayNew, monthNew} end
local grant = math.min(want, math.max(need, math.floor(left / 4)))
day = redis.call('INCRBY', KEYS[1], grant)
month = redis.call('INCRBY', KEYS[2], grant)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[5]))
redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[6]))
return {grant, day, month, dayNew, monthNew}
`;

// Adds what was spent where Redis did not count it to a scope's day and month counters: ARGV[1] and ARGV[2],
// each only to a counter that is there when ARGV[3] is 1 (one that is not will be counted from the store).
const ADD_SCRIPT = `
for i = 1, 2 do
  local units = tonumber(ARGV[i])
  if units > 0 and (ARGV[3] == '0' or redis.call('EXISTS', KEYS[i]) == 1) then
    redis.call('INCRBY', KEYS[i], units)
    redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[3 + i]))
  end
end
return 1
`;

type LeaseCommand = (
  dayKey: string,
  monthKey: string,
  daily: number,
  monthly: number,
  need: number,
  want: number,
  dayTtlMs: number,
  monthTtlMs: number,
) => Promise<[number, number, number, number, number]>;

type AddCommand = (
  dayKey: string,
  monthKey: string,
  dayUnits: number,
  monthUnits: number,
  onlyThere: 0 | 1,
  dayTtlMs: number,
  monthTtlMs: number,
) => Promise<number>;

interface Lease {
  /** The period the lease was granted in: a lease ends with its day. */
  day: string;
  /** Compute units this instance may spend; below zero when answers cost more than was reserved. */
  balance: number;
  /** A lease asked of Redis and not answered yet. */
  pending: Promise<void> | undefined;
  /** Whether Redis's last answer granted nothing: the quota is spent until the period turns. */
  spent: boolean;
  /** The scope's counters in Redis at its last answer: what every instance leased this day and month. */
  dayUnits: number;
  monthUnits: number;
  usedAt: number;
}

/** A scope's lease unused this long is dropped (its balance is this instance's, and goes with it). */
const IDLE_MS = 60_000;
const DAY_MS = 86_400_000;

/**
 * Quotas counted for every proxy instance and worker together in Redis, the way rate limits are
 * (limits/shared-buckets.ts): each instance leases compute units from the scope's day and month counters
 * and spends them locally, asking for the next lease when half of one is left. Redis never grants more
 * than the quota holds, so no instance serves past it; what instances hold unspent when it runs out is at
 * most a quarter of what was left each, so a quota may refuse that much early, and never late.
 *
 * A call that finds its lease short waits for Redis (once per lease, not per call). While Redis cannot be
 * reached, each instance counts alone (LocalQuotaLedger) and says so in the log.
 */
export class SharedQuotaLedger implements QuotaLedger {
  readonly #redis: Redis;
  readonly #lease: LeaseCommand;
  readonly #add: AddCommand;
  readonly #leaseMs: number;
  /** Where the scopes' spend is counted while Redis cannot be reached: anew at each outage. */
  #local: LocalQuotaLedger;
  /** What each scope had spent when the outage began, as Redis last said: the local count started there. */
  #outageBase = new Map<
    string,
    { readonly day: string; readonly dayUnits: number; readonly monthUnits: number }
  >();
  readonly #source: QuotaSpentSource | undefined;
  readonly #leases = new Map<string, Lease>();
  readonly #clock = new QuotaClock();
  readonly #crossed: (crossing: QuotaCrossing) => void;
  readonly #logger: Logger;
  #shared = false;
  #wasShared = false;
  #closed = false;
  /** The next time Redis is asked whether it answers again, after a lease failed. */
  #retry: NodeJS.Timeout | undefined;
  #lastError = "";

  /** `source`: the account store's usage counts, which a counter Redis lost starts from. */
  constructor(
    config: SharedLimitsConfig,
    logger: Logger,
    crossed: (crossing: QuotaCrossing) => void,
    source?: QuotaSpentSource,
  ) {
    this.#source = source;
    this.#leaseMs = config.leaseMs;
    this.#logger = logger;
    this.#crossed = crossed;
    this.#local = new LocalQuotaLedger(crossed);
    this.#redis = new Redis(config.redis, sharedRedisOptions("gateway:quota:"));
    this.#redis.defineCommand("gatewayQuotaLease", { numberOfKeys: 2, lua: LEASE_SCRIPT });
    this.#lease = (this.#redis as unknown as { gatewayQuotaLease: LeaseCommand }).gatewayQuotaLease.bind(
      this.#redis,
    );
    this.#redis.defineCommand("gatewayQuotaAdd", { numberOfKeys: 2, lua: ADD_SCRIPT });
    this.#add = (this.#redis as unknown as { gatewayQuotaAdd: AddCommand }).gatewayQuotaAdd.bind(this.#redis);
    // an error from before is not why a later outage began
    this.#redis.on("ready", () => {
      this.#lastError = "";
      this.#setShared(true);
    });
    this.#redis.on("close", () => this.#setShared(false));
    // the state change is what is logged, with the last error's message as its reason (shared-buckets.ts)
    this.#redis.on("error", (error: Error) => {
      this.#lastError = error.message;
    });
  }

  get shared(): boolean {
    return this.#shared;
  }

  /** Resolves once Redis answered, or after `timeoutMs` with quotas counted here meanwhile. */
  ready(timeoutMs: number): Promise<boolean> {
    return redisReady(this.#redis, timeoutMs, () => this.#shared);
  }

  /** `ratePerSecond`: the scope's compute-unit rate, of which a lease is `leaseMs`. */
  take(
    scope: string,
    limits: QuotaLimits,
    cost: number,
    ratePerSecond = cost,
  ): QuotaDecision | Promise<QuotaDecision> {
    const size = ratePerSecond;
    if (!this.#shared) return this.#local.take(scope, limits, cost);
    const lease = this.#leaseOf(scope);
    if (lease.balance >= cost) {
      lease.balance -= cost;
      if (lease.balance < this.#size(size, cost) / 2 && !lease.spent)
        this.#renew(scope, lease, limits, 0, size, cost);
      return ALLOWED;
    }
    // Redis had no room for a call before: one that needs more than the room it had is refused at once
    if (lease.spent && cost - lease.balance > this.#room(limits, lease))
      return this.#refusal(scope, limits, lease, cost);
    return this.#waitFor(scope, lease, limits, cost, size);
  }

  adjust(scope: string, limits: QuotaLimits, delta: number): void {
    if (!this.#shared) {
      this.#local.adjust(scope, limits, delta);
      return;
    }
    const lease = this.#leases.get(scope);
    if (lease !== undefined) lease.balance -= delta;
  }

  /**
   * After a lease failed on a connection that stayed up (Redis hung: a slow fork, a failover), Redis is
   * asked every second until it answers, and quotas are shared again then: no reconnection would say so.
   */
  #untilAnswering(): void {
    if (this.#retry !== undefined) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      if (this.#shared || this.#closed) return;
      // a connection that dropped says it is back through `ready`
      if (this.#redis.status !== "ready") return;
      this.#redis.ping().then(
        () => this.#setShared(true),
        () => this.#untilAnswering(),
      );
    }, 1_000).unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    this.#redis.removeAllListeners("close");
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }

  async #waitFor(
    scope: string,
    lease: Lease,
    limits: QuotaLimits,
    cost: number,
    size: number,
  ): Promise<QuotaDecision> {
    // one lease at a time per scope: a call that finds one on the way waits for it, then looks again
    while (lease.pending !== undefined) await lease.pending;
    if (lease.balance >= cost) {
      lease.balance -= cost;
      return ALLOWED;
    }
    await this.#renew(scope, lease, limits, cost - lease.balance, size, cost);
    if (!this.#shared) return this.#local.take(scope, limits, cost);
    if (lease.balance >= cost) {
      lease.balance -= cost;
      return ALLOWED;
    }
    return this.#refusal(scope, limits, lease, cost);
  }

  #renew(
    scope: string,
    lease: Lease,
    limits: QuotaLimits,
    need: number,
    size: number,
    cost: number,
  ): Promise<void> {
    if (lease.pending !== undefined) return lease.pending;
    const clock = this.#clock;
    const want = this.#size(size, cost) + Math.max(0, need);
    const day = lease.day;
    const month = day.slice(0, 7);
    const ttl = this.#ttls();
    lease.pending = this.#lease(
      `${scope}:${day}`,
      `${scope}:${month}`,
      limits.daily,
      limits.monthly,
      Math.max(1, need),
      want,
      ttl.day,
      ttl.month,
    )
      .then(
        ([granted, dayUnits, monthUnits, dayNew, monthNew]) => {
          // the scope's next lease waits for a missing counter's start from the store, so none is granted
          // from a counter that forgot the day's spend
          const restored =
            dayNew === 1 || monthNew === 1
              ? this.#fromStore(scope, day, dayNew === 1, monthNew === 1)
              : undefined;
          if (lease.day !== day) return restored;
          lease.balance += granted;
          lease.spent = granted === 0;
          lease.dayUnits = dayUnits;
          lease.monthUnits = monthUnits;
          const spent = {
            day: [dayUnits - granted, dayUnits],
            month: [monthUnits - granted, monthUnits],
          } as {
            day: [number, number];
            month: [number, number];
          };
          for (const crossing of clock.crossings(scope, limits, spent)) this.#crossed(crossing);
          return restored;
        },
        (error: Error) => {
          // a lease that failed is decided locally; a dropped connection says so through `close`
          this.#logger.log("warn", "shared quotas: a lease failed, counted locally", {
            reason: error.message,
          });
          this.#setShared(false);
          this.#untilAnswering();
        },
      )
      .finally(() => {
        lease.pending = undefined;
      });
    return lease.pending;
  }

  /**
   * A counter the lease found missing starts from what the account store counted for the scope: Redis lost
   * it (a restart, a flush, a new server), or the day is new, when the store holds only what instances
   * counted alone while Redis was away. What the proxies counted since their last usage flush is not in the
   * store: a quota may serve that much past it once, at such a loss.
   */
  #fromStore(scope: string, day: string, dayNew: boolean, monthNew: boolean): Promise<void> | undefined {
    const source = this.#source;
    if (source === undefined) return undefined;
    const ttl = this.#ttls();
    return source
      .spent(scope, day)
      .then(({ day: dayUnits, month: monthUnits }) =>
        this.#add(
          `${scope}:${day}`,
          `${scope}:${day.slice(0, 7)}`,
          dayNew ? dayUnits : 0,
          monthNew ? monthUnits : 0,
          0,
          ttl.day,
          ttl.month,
        ),
      )
      .then(
        () => {},
        (error: Error) =>
          this.#logger.log("warn", "shared quotas: a counter Redis lost could not be read from the store", {
            reason: error.message,
          }),
      );
  }

  /** How long a day's and a month's counters are kept: past their period's end, by a day. */
  #ttls(): { readonly day: number; readonly month: number } {
    const now = Date.now();
    return { day: this.#clock.dayEndsAt - now + DAY_MS, month: this.#clock.monthEndsAt - now + DAY_MS };
  }

  /**
   * Redis is back after an outage: what each scope spent meanwhile, counted here alone, is added to its
   * counters that Redis kept (a counter it lost starts from the store, whose usage counts hold it).
   */
  #addOutage(): void {
    const ttl = this.#ttls();
    for (const [scope, spent] of this.#local.scopes()) {
      const base = this.#outageBase.get(scope);
      const dayUnits = spent.dayUnits - (base?.day === spent.day ? base.dayUnits : 0);
      const monthUnits = spent.monthUnits - (base?.monthUnits ?? 0);
      if (dayUnits <= 0 && monthUnits <= 0) continue;
      this.#add(
        `${scope}:${spent.day}`,
        `${scope}:${spent.day.slice(0, 7)}`,
        Math.max(0, dayUnits),
        Math.max(0, monthUnits),
        1,
        ttl.day,
        ttl.month,
      ).catch(() => {
        // Redis went away again: the next outage counts from what it last said
      });
    }
  }

  /** The quota Redis had no room in: the counters less this instance's unspent balance, with this call. */
  #refusal(scope: string, limits: QuotaLimits, lease: Lease, cost: number): QuotaDecision {
    const clock = this.#clock;
    const unspent = Math.max(0, lease.balance);
    const decided = clock.decide(limits, lease.dayUnits - unspent, lease.monthUnits - unspent, cost);
    // what other instances hold unspent is not known here: the quota with the less room left refused
    const decision: QuotaDecision = decided.allowed
      ? limits.daily > 0 &&
        (limits.monthly === 0 || limits.daily - lease.dayUnits <= limits.monthly - lease.monthUnits)
        ? { allowed: false, period: "day", limit: limits.daily, resetsAt: clock.dayEndsAt }
        : { allowed: false, period: "month", limit: limits.monthly, resetsAt: clock.monthEndsAt }
      : decided;
    this.#crossed(clock.spentCrossing(scope, limits, decision));
    return decision;
  }

  /** What Redis had left under both quotas at its last answer. */
  #room(limits: QuotaLimits, lease: Lease): number {
    let room = Number.POSITIVE_INFINITY;
    if (limits.daily > 0) room = Math.min(room, limits.daily - lease.dayUnits);
    if (limits.monthly > 0) room = Math.min(room, limits.monthly - lease.monthUnits);
    return room;
  }

  #size(size: number, cost: number): number {
    return Math.max(cost, Math.ceil((size * this.#leaseMs) / 1000));
  }

  #leaseOf(scope: string): Lease {
    const clock = this.#clock;
    if (clock.tick()) this.#leases.clear();
    const now = Date.now();
    let lease = this.#leases.get(scope);
    if (lease === undefined) {
      if (this.#leases.size >= 100_000) this.#sweep(now);
      lease = {
        day: clock.day,
        balance: 0,
        pending: undefined,
        spent: false,
        dayUnits: 0,
        monthUnits: 0,
        usedAt: now,
      };
      this.#leases.set(scope, lease);
    }
    lease.usedAt = now;
    return lease;
  }

  /**
   * Redis is away: each scope is counted here from what Redis last said it spent, so a quota spent before
   * the outage stays spent (each instance may still serve what was left, once).
   */
  #countAlone(): void {
    this.#local = new LocalQuotaLedger(this.#crossed);
    this.#outageBase = new Map();
    const day = this.#clock.day;
    for (const [scope, lease] of this.#leases) {
      if (lease.day !== day) continue;
      this.#local.startAt(scope, lease.dayUnits, lease.monthUnits);
      this.#outageBase.set(scope, { day, dayUnits: lease.dayUnits, monthUnits: lease.monthUnits });
    }
  }

  #sweep(now: number): void {
    for (const [scope, lease] of this.#leases)
      if (lease.pending === undefined && now - lease.usedAt > IDLE_MS) this.#leases.delete(scope);
  }

  #setShared(shared: boolean): void {
    if (shared === this.#shared) return;
    this.#shared = shared;
    if (shared) this.#addOutage();
    else this.#countAlone();
    this.#leases.clear();
    if (shared) {
      const again = this.#wasShared ? " again" : "";
      this.#wasShared = true;
      this.#logger.log("info", `shared quotas: Redis reachable, quotas shared${again}`);
    } else
      this.#logger.log("warn", "shared quotas: Redis unreachable, each instance counts its quotas alone", {
        // a clean shutdown (redis-cli shutdown, a restart) closes the connection with no error
        reason: this.#lastError || "Redis closed the connection",
      });
  }
}
