import type { Redis } from "ioredis";
import type { SharedLimitsConfig } from "../config/types.js";
import { sharedRedis, sharedRedisOptions } from "../limits/redis-options.js";
import type { Logger } from "../log.js";
import {
  ALLOWED,
  QuotaClock,
  type QuotaCrossing,
  type QuotaDecision,
  type QuotaLedger,
  type QuotaLimits,
  type QuotaSpentSource,
} from "./quota-ledger.js";
import { QuotaRecovery } from "./quota-recovery.js";
import { counterKeys, type QuotaCommands, quotaCommands } from "./quota-scripts.js";

interface Lease {
  /** The period the lease was granted in: a lease ends with its day. */
  day: string;
  /** Compute units this instance may spend; below zero when answers cost more than was reserved. */
  balance: number;
  /** A lease asked of Redis and not answered yet. */
  pending: Promise<void> | undefined;
  /** Whether Redis's last answer granted nothing: the quota is spent until the period turns. */
  spent: boolean;
  /** Whether Redis answered a lease of it: its counters below are Redis's, not the 0 it began with. */
  answered: boolean;
  /** The scope's counters in Redis at its last answer: what every instance leased this day and month. */
  dayUnits: number;
  monthUnits: number;
  /** What this instance spent since it last told Redis (with a lease, or giving one back). */
  unreported: number;
  /** The quotas it was last taken under: what a spending told Redis without a lease crosses. */
  limits: QuotaLimits;
  /**
   * Whether the quotas changed (a reload) since Redis last answered: its counters are of then, and other
   * instances may have spent past the new quota since, so Redis is asked before the lease is spent again.
   */
  stale: boolean;
  usedAt: number;
}

/** A scope's lease unused this long gives back what it holds, tells what was spent from it, and is dropped. */
const IDLE_MS = 60_000;

/**
 * A lease holds at most this share of the scope's smaller quota: what instances hold unspent when the quota
 * runs out is refused early, and a lease sized by a rate alone could be most of a small quota.
 */
const LEASE_SHARE = 1 / 50;

/**
 * Quotas counted for every proxy instance and worker together in Redis, the way rate limits are
 * (limits/shared-buckets.ts): each instance leases compute units from the scope's day and month counters
 * and spends them locally, asking for the next lease when half of one is left. Redis never grants more
 * than the quota holds, so no instance serves past it; what instances hold unspent when it runs out is at
 * most a quarter of what was left each, and a fiftieth of the quota (LEASE_SHARE), so a quota may refuse
 * that much early, and never late. With each lease an instance tells Redis what it spent since the last:
 * the 80 % and 100 % crossings are of what was spent, not leased. A stop gives back what was leased and
 * not spent.
 *
 * A call that finds its lease short waits for Redis (once per lease, not per call). While Redis cannot be
 * reached, each instance counts alone and says so in the log; a spent quota stays spent through that and
 * through counters Redis lost (quota-recovery.ts).
 */
export class SharedQuotaLedger implements QuotaLedger {
  readonly #redis: Redis;
  readonly #commands: QuotaCommands;
  readonly #leaseMs: number;
  /** A spent quota kept spent through a Redis outage or loss (quota-recovery.ts). */
  readonly #recovery: QuotaRecovery;
  readonly #leases = new Map<string, Lease>();
  readonly #clock = new QuotaClock();
  readonly #crossed: (crossing: QuotaCrossing) => void;
  readonly #logger: Logger;
  #shared = false;
  #wasShared = false;
  #closed = false;
  /** `ready`'s callers, told once quotas are shared. */
  readonly #whenShared: (() => void)[] = [];
  /** The next time Redis is asked whether it answers again, after a lease failed. */
  #retry: NodeJS.Timeout | undefined;
  /** Leases left idle give back what they hold and tell what was spent from them (#sweep). */
  readonly #idle: NodeJS.Timeout;
  #lastError = "";
  /** What was served alone being added to Redis's counters, since quotas were last shared again. */
  #back: Promise<void> = Promise.resolve();

  /** `source`: the account store's usage counts, which a counter Redis lost starts from. */
  constructor(
    config: SharedLimitsConfig,
    logger: Logger,
    crossed: (crossing: QuotaCrossing) => void,
    source?: QuotaSpentSource,
  ) {
    this.#leaseMs = config.leaseMs;
    this.#logger = logger;
    this.#crossed = crossed;
    this.#redis = sharedRedis(config.redis, sharedRedisOptions("gateway:quota:"));
    this.#commands = quotaCommands(this.#redis);
    this.#recovery = new QuotaRecovery(this.#commands, source, logger, crossed);
    this.#idle = setInterval(() => this.#sweep(Date.now()), IDLE_MS);
    this.#idle.unref();
    // an error from before is not why a later outage began
    // shared once Redis takes a write: one that answers but refuses writes (out of memory, a read-only
    // replica after a failover) would fail every lease, flapping between shared and alone each reconnection
    this.#redis.on("ready", () => {
      this.#lastError = "";
      this.#commands.writable().then(
        () => this.#setShared(true),
        (error: Error) => {
          this.#lastError = error.message;
          this.#untilAnswering();
        },
      );
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
    if (this.#shared) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(this.#shared), timeoutMs);
      this.#whenShared.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** `ratePerSecond`: the scope's compute-unit rate, of which a lease is `leaseMs`. */
  take(
    scope: string,
    limits: QuotaLimits,
    cost: number,
    ratePerSecond = cost,
  ): QuotaDecision | Promise<QuotaDecision> {
    const size = ratePerSecond;
    if (!this.#shared) return this.#alone(scope, limits, cost, ratePerSecond);
    const lease = this.#leaseOf(scope, limits);
    if (lease.balance >= cost && !lease.stale) {
      if (this.#past(limits, lease, cost)) return this.#refusal(scope, limits, lease, cost);
      spend(lease, cost);
      if (lease.balance < this.#size(size, cost, limits) / 2 && !lease.spent)
        this.#renew(scope, lease, limits, 0, size, cost);
      return ALLOWED;
    }
    // Redis had no room for a call before: one that needs more than the room it had is refused at once
    if (lease.spent && cost - lease.balance > this.#room(limits, lease))
      return this.#refusal(scope, limits, lease, cost);
    return this.#waitFor(scope, lease, limits, cost, size);
  }

  /**
   * A settle's difference counts in the day and month the units were held in, as in the in-process ledger
   * (quota-ledger.ts): spent from this day's lease, or, for units held on a day that has turned (its lease
   * was given back at the turn), told to that day's counters and its month's in Redis, which are kept past
   * their period's end: a refund makes no room in the new day (nor the new month), and an extra charge
   * goes to the period it belongs to, or nowhere once Redis dropped that period's counters.
   */
  adjust(scope: string, limits: QuotaLimits, delta: number, heldAt: number): void {
    if (delta === 0) return;
    if (!this.#shared) {
      this.#recovery.local.adjust(scope, limits, delta, heldAt);
      return;
    }
    this.#turn();
    if (this.#clock.periodOf(heldAt) !== "day") {
      // leased then and spent: the leased counters and the spent ones both change by the difference
      const day = new Date(heldAt).toISOString().slice(0, 10);
      void this.#tell(scope, day, limits, -delta, delta);
      return;
    }
    const lease = this.#leases.get(scope);
    if (lease !== undefined) spend(lease, delta);
  }

  /**
   * After a lease failed on a connection that stayed up (Redis hung: a slow fork, a failover), Redis is
   * asked a second later, and quotas are shared again once it takes a write (a lease refused for memory
   * would fail again): no reconnection would say so. One that does not answer then is reconnected.
   */
  #untilAnswering(): void {
    if (this.#retry !== undefined) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      if (this.#shared || this.#closed) return;
      // a connection that dropped says it is back through `ready`
      if (this.#redis.status !== "ready") return;
      // a connection that stays silent (a partition drops its bytes, no reset comes) is made anew: its
      // reconnection says it is back through `ready`
      // one that answers with a refusal (out of memory, read-only) is asked again a second later
      this.#commands.writable().then(
        () => this.#setShared(true),
        (error: Error) => {
          this.#lastError = error.message;
          if (this.#closed) return;
          if (error.name === "ReplyError") this.#untilAnswering();
          else this.#redis.disconnect(true);
        },
      );
    }, 1_000).unref();
  }

  /**
   * `waitForRedisMs`: how long a stop while Redis is away waits for it to answer again, so that what this
   * instance counted alone is added to its counters: once it has stopped, no instance would add it, and the
   * quota would be served again from counters that never learnt of it.
   */
  async close(waitForRedisMs = 0): Promise<void> {
    const deadline = performance.now() + waitForRedisMs;
    if (!this.#shared && waitForRedisMs > 0 && this.#recovery.servedAlone()) {
      this.#logger.log("warn", "shared quotas: stopping while Redis is unreachable: waiting for it", {
        waitMs: waitForRedisMs,
      });
      await this.ready(waitForRedisMs);
    }
    // the adding is one call per quota, each with its deadline: the stop waits for it no longer in all
    const left = Math.max(0, deadline - performance.now());
    await Promise.race([this.#back, new Promise((resolve) => setTimeout(resolve, left).unref())]);
    this.#closed = true;
    clearTimeout(this.#retry);
    clearInterval(this.#idle);
    this.#redis.removeAllListeners("close");
    // what this instance leased and did not spend goes back: a restart forfeits none of the day's quota
    if (this.#shared) {
      const given = [...this.#leases].map(([scope, lease]) => this.#giveBack(scope, lease));
      await Promise.race([Promise.all(given), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
    }
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }

  /**
   * What a lease holds unspent goes back to its day's counters, and what was spent from it and not told is
   * told, with the crossings it makes: at a stop, when the day turns, for a lease left idle.
   */
  #giveBack(scope: string, lease: Lease): Promise<unknown> {
    const unspent = Math.max(0, lease.balance);
    if (!lease.answered || (unspent === 0 && lease.unreported === 0)) return Promise.resolve();
    lease.balance -= unspent;
    const spent = lease.unreported;
    lease.unreported = 0;
    return this.#tell(scope, lease.day, lease.limits, unspent, spent);
  }

  /**
   * `unspent` leased units of `day` go back to its counters and `spent` units are added to its spent ones
   * (either may be below zero; counters Redis no longer holds take nothing), with the crossings it makes.
   */
  #tell(scope: string, day: string, limits: QuotaLimits, unspent: number, spent: number): Promise<unknown> {
    const clock = this.#clock;
    return this.#commands.giveBack(counterKeys(scope, day), unspent, spent).then(
      ([daySpent, monthSpent]) => {
        // a day that has turned: its crossings would be announced as the new day's, and only the month's
        // are still the month's while it has not turned too
        const sameDay = day === clock.day;
        if (!sameDay && day.slice(0, 7) !== clock.day.slice(0, 7)) return;
        this.#told(scope, limits, spent, sameDay ? daySpent : undefined, monthSpent);
      },
      () => {},
    );
  }

  /**
   * `spent` units told to Redis brought its spent counters to `daySpent` and `monthSpent`: the 80 % and
   * 100 % they passed are announced (the day's only where `daySpent` is given).
   */
  #told(
    scope: string,
    limits: QuotaLimits,
    spent: number,
    daySpent: number | undefined,
    monthSpent: number,
  ): void {
    const told = {
      day: (daySpent === undefined ? [0, 0] : [daySpent - spent, daySpent]) as [number, number],
      month: [monthSpent - spent, monthSpent] as [number, number],
    };
    for (const crossing of this.#clock.crossings(scope, limits, told)) this.#crossed(crossing);
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
    // the lease waited for failed (Redis hung, or gone): counted here, as the calls after it are, rather
    // than each waiting its own lease's deadline in turn behind the one before
    if (!this.#shared) return this.#alone(scope, limits, cost, size);
    if (lease.balance >= cost && !lease.stale && !this.#past(limits, lease, cost)) {
      spend(lease, cost);
      return ALLOWED;
    }
    await this.#renew(scope, lease, limits, cost - lease.balance, size, cost);
    if (!this.#shared) return this.#alone(scope, limits, cost, size);
    if (lease.balance >= cost && !this.#past(limits, lease, cost)) {
      spend(lease, cost);
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
    const want = this.#size(size, cost, limits) + Math.max(0, need);
    const day = lease.day;
    const keys = counterKeys(scope, day);
    // what was spent since the last lease goes with this one; it is this instance's again if Redis fails
    const reported = lease.unreported;
    lease.unreported = 0;
    const ask = (blind: boolean) =>
      this.#commands.lease(keys, limits, Math.max(1, need), want, this.#recovery.ttls(), reported, blind);
    // a month not started from the store grants nothing (its counters may have forgotten what was spent: a
    // Redis restarted empty): it is started (waiting a little for the store, recovery.start), and asked again
    const pending = ask(false)
      .then((answer) => (answer[3] === 1 ? this.#recovery.start(scope, day).then(() => ask(true)) : answer))
      .then(
        ([granted, dayUnits, monthUnits, , daySpent, monthSpent]) => {
          lease.answered = true;
          if (lease.day !== day) return;
          lease.stale = false;
          lease.balance += granted;
          lease.spent = granted === 0;
          lease.dayUnits = dayUnits;
          lease.monthUnits = monthUnits;
          this.#told(scope, limits, reported, daySpent, monthSpent);
        },
        (error: Error) => {
          lease.unreported += reported;
          // a lease that failed is decided locally; a dropped connection says so through `close`
          this.#lastError = error.message;
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
    lease.pending = pending;
    return pending;
  }

  /** The quota Redis had no room in: the counters less this instance's unspent balance, with this call. */
  #refusal(scope: string, limits: QuotaLimits, lease: Lease, cost: number): QuotaDecision {
    const clock = this.#clock;
    const unspent = Math.max(0, lease.balance);
    const decided = clock.decide(limits, lease.dayUnits - unspent, lease.monthUnits - unspent, cost);
    // what other instances hold unspent is not known here: the quota with the less room left refused, with
    // what this instance holds of it as what remains
    const decision: QuotaDecision = decided.allowed
      ? limits.daily > 0 &&
        (limits.monthly === 0 || limits.daily - lease.dayUnits <= limits.monthly - lease.monthUnits)
        ? {
            allowed: false,
            period: "day",
            limit: limits.daily,
            resetsAt: clock.dayEndsAt,
            remaining: unspent,
          }
        : {
            allowed: false,
            period: "month",
            limit: limits.monthly,
            resetsAt: clock.monthEndsAt,
            remaining: unspent,
          }
      : decided;
    this.#crossed(clock.spentCrossing(scope, limits, decision));
    return decision;
  }

  /**
   * Whether `cost` more would pass a quota lowered (by a reload) below what Redis had leased: what every
   * instance leased, less this one's unspent balance, counts as spent. Redis never leases past the quota
   * it was asked under, so with the quota unchanged this never holds while the balance covers the cost.
   */
  #past(limits: QuotaLimits, lease: Lease, cost: number): boolean {
    if (!lease.answered) return false;
    const unspent = Math.max(0, lease.balance);
    return (
      (limits.daily > 0 && lease.dayUnits - unspent + cost > limits.daily) ||
      (limits.monthly > 0 && lease.monthUnits - unspent + cost > limits.monthly)
    );
  }

  /** What Redis had left under both quotas at its last answer. */
  #room(limits: QuotaLimits, lease: Lease): number {
    let room = Number.POSITIVE_INFINITY;
    if (limits.daily > 0) room = Math.min(room, limits.daily - lease.dayUnits);
    if (limits.monthly > 0) room = Math.min(room, limits.monthly - lease.monthUnits);
    return room;
  }

  /** A lease: `leaseMs` of the scope's rate, at most LEASE_SHARE of its smaller quota, never less than the call. */
  #size(size: number, cost: number, limits: QuotaLimits): number {
    const quota = Math.min(
      limits.daily || Number.POSITIVE_INFINITY,
      limits.monthly || Number.POSITIVE_INFINITY,
    );
    return Math.max(cost, Math.min(Math.ceil((size * this.#leaseMs) / 1000), Math.ceil(quota * LEASE_SHARE)));
  }

  /** Brings the clock up to now: the day's leases end with it, what they hold goes back, what was spent is told. */
  #turn(): void {
    if (!this.#clock.tick()) return;
    for (const [held, lease] of this.#leases) void this.#giveBack(held, lease);
    this.#leases.clear();
  }

  #leaseOf(scope: string, limits: QuotaLimits): Lease {
    const clock = this.#clock;
    this.#turn();
    const now = Date.now();
    let lease = this.#leases.get(scope);
    if (lease === undefined) {
      if (this.#leases.size >= 100_000) this.#sweep(now);
      lease = {
        day: clock.day,
        balance: 0,
        pending: undefined,
        spent: false,
        answered: false,
        dayUnits: 0,
        monthUnits: 0,
        unreported: 0,
        limits,
        stale: false,
        usedAt: now,
      };
      this.#leases.set(scope, lease);
    }
    lease.usedAt = now;
    if (lease.answered && (lease.limits.daily !== limits.daily || lease.limits.monthly !== limits.monthly))
      lease.stale = true;
    lease.limits = limits;
    return lease;
  }

  /** A call while Redis is away, counted here (recovery.local), from what the scope spent before. */
  #alone(
    scope: string,
    limits: QuotaLimits,
    cost: number,
    ratePerSecond: number,
  ): QuotaDecision | Promise<QuotaDecision> {
    const reading = this.#recovery.seen(scope);
    if (reading === undefined) return this.#recovery.local.take(scope, limits, cost);
    // counted once the store said what the scope spent; shared again meanwhile, it leases
    return reading.then(() => this.take(scope, limits, cost, ratePerSecond));
  }

  #sweep(now: number): void {
    if (!this.#shared) return;
    for (const [scope, lease] of this.#leases)
      if (lease.pending === undefined && now - lease.usedAt > IDLE_MS) {
        void this.#giveBack(scope, lease);
        this.#leases.delete(scope);
      }
  }

  #setShared(shared: boolean): void {
    if (shared === this.#shared) return;
    this.#shared = shared;
    if (shared) for (const told of this.#whenShared.splice(0)) told();
    if (shared) this.#back = this.#recovery.back();
    else
      this.#recovery.alone(
        [...this.#leases].flatMap(([scope, lease]) =>
          lease.answered
            ? [[scope, { day: lease.day, dayUnits: lease.dayUnits, monthUnits: lease.monthUnits }] as const]
            : [],
        ),
      );
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

/** Units spent from a lease (a call's price, or what its answer cost beyond or below it), to be told to Redis. */
function spend(lease: Lease, units: number): void {
  lease.balance -= units;
  lease.unreported += units;
}
