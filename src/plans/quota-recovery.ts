import type { Logger } from "../log.js";
import { LocalQuotaLedger, QuotaClock, type QuotaCrossing, type QuotaSpentSource } from "./quota-ledger.js";
import { type CounterTtls, counterKeys, type QuotaCommands } from "./quota-scripts.js";
import { type StartedAt, StoreStartedLedger, waited } from "./store-started.js";

/** What a scope had spent as an outage began: where its count alone started. */
type Base = StartedAt;

const DAY_MS = 86_400_000;

/**
 * What keeps a spent quota spent when Redis loses its counters or goes away (docs/plans.md, "Many
 * instances"), for a SharedQuotaLedger:
 * - a scope's month is started once from the account store's usage counts (`start`): its first lease of a
 *   month, or its first after Redis lost its counters, whose mark of it went with them;
 * - while Redis is away, each scope is counted alone from what Redis last said it spent, or, for one this
 *   instance had not leased, from the store (`alone`, `seen`);
 * - once Redis takes writes again, what was served alone is added to the counters of a month started
 *   (`back`); a month not started (Redis lost it) starts from the store, whose usage counts hold it. Where
 *   it cannot tell, it counts twice rather than not at all: a quota may refuse early, never serve late.
 */
export class QuotaRecovery {
  readonly #commands: QuotaCommands;
  readonly #source: QuotaSpentSource | undefined;
  readonly #logger: Logger;
  /** Its own clock, brought up to now at each use: the ledger's ticks only as calls come. */
  readonly #clock = new QuotaClock();
  readonly #crossed: (crossing: QuotaCrossing) => void;
  /** Scopes whose month this instance is starting from the store now, by scope and month. */
  readonly #starting = new Map<string, Promise<void>>();
  /** The count while Redis is away: anew at each outage, its scopes not leased started from the store. */
  #local: StoreStartedLedger;
  #bases = new Map<string, Base>();
  #unreadCount = 0;
  #unreadLoggedAt = Number.NEGATIVE_INFINITY;

  constructor(
    commands: QuotaCommands,
    source: QuotaSpentSource | undefined,
    logger: Logger,
    crossed: (crossing: QuotaCrossing) => void,
  ) {
    this.#commands = commands;
    this.#source = source;
    this.#logger = logger;
    this.#crossed = crossed;
    this.#local = this.#counted(this.#bases);
  }

  /** A count alone, whose scopes read from the store are `bases`' (what `back` does not add again). */
  #counted(bases: Map<string, Base>): StoreStartedLedger {
    return new StoreStartedLedger(new LocalQuotaLedger(this.#crossed), this.#source, (scope, base) =>
      bases.set(scope, base),
    );
  }

  /**
   * A quota's spend the store did not give: logged at most every 10 s, with how many since, since a month's
   * first minutes (or a Redis loss) start every busy quota at once.
   */
  #unread(error: Error): void {
    this.#unreadCount += 1;
    const now = performance.now();
    if (now - this.#unreadLoggedAt < 10_000) return;
    this.#logger.log(
      "warn",
      "shared quotas: quotas' spend could not be read from the store; asked again at their next lease",
      {
        quotas: this.#unreadCount,
        reason: error.message,
      },
    );
    this.#unreadLoggedAt = now;
    this.#unreadCount = 0;
  }

  /** The count while Redis is away. */
  get local(): LocalQuotaLedger {
    return this.#local.local;
  }

  /**
   * Starts `scope`'s month from the store, once across instances (a START script the first to finish
   * runs): resolves when done, or after START_WAIT_MS, so a slow store holds a lease that long at most.
   * A store that cannot be read leaves the month unstarted: the next lease tries again.
   */
  start(scope: string, day: string): Promise<void> {
    // by month too: a start still waiting on the store as the month turns is not the new month's
    const key = `${scope}\n${day.slice(0, 7)}`;
    let starting = this.#starting.get(key);
    if (starting === undefined) {
      // with no store (keys of the deployment config alone) the month starts from nothing, marked all the
      // same: what is served alone is added to counters this Redis started
      const spent = this.#source?.spent(scope, day) ?? Promise.resolve({ day: 0, month: 0 });
      starting = spent
        .then(({ day: dayUnits, month: monthUnits }) =>
          this.#commands.start(counterKeys(scope, day), dayUnits, monthUnits, this.ttls()),
        )
        .then(
          () => {},
          (error: Error) => this.#unread(error),
        )
        .finally(() => this.#starting.delete(key));
      this.#starting.set(key, starting);
    }
    return waited(starting);
  }

  /**
   * Redis went away: each scope `leases` names (those Redis answered today) is counted alone from what
   * Redis last said it spent; any other, from the store (`seen`).
   */
  alone(leases: Iterable<[string, Base]>): void {
    this.#bases = new Map();
    this.#local = this.#counted(this.#bases);
    this.#clock.tick();
    const day = this.#clock.day;
    for (const [scope, base] of leases) {
      if (base.day !== day) continue;
      // counted from Redis's answer: not read from the store
      this.#local.local.startAt(scope, base.dayUnits, base.monthUnits);
      this.#bases.set(scope, base);
    }
  }

  /**
   * A scope counted alone that this instance had not leased today: counted from the store's spend, which
   * its calls wait for (undefined: nothing to wait for).
   */
  seen(scope: string): Promise<void> | undefined {
    return this.#local.starting(scope);
  }

  /** Whether some scope was counted alone since Redis went away: what `back` would add. */
  servedAlone(): boolean {
    for (const [scope, spent] of this.#local.local.scopes()) {
      const base = this.#bases.get(scope);
      if (base === undefined || spent.dayUnits > base.dayUnits || spent.monthUnits > base.monthUnits)
        return true;
    }
    return false;
  }

  /**
   * Redis is back: what each scope was served alone is added to the counters of a month started; a month
   * not started (Redis lost it) starts from the store, which the usage flushes fill.
   */
  async back(): Promise<void> {
    const ttl = this.ttls();
    for (const [scope, spent] of this.#local.local.scopes()) {
      const base = this.#bases.get(scope);
      const dayUnits = spent.dayUnits - (base?.day === spent.day ? base.dayUnits : 0);
      // a month that turned during the outage: the new month's count started at 0
      const monthUnits =
        spent.monthUnits - (base?.day.slice(0, 7) === spent.day.slice(0, 7) ? base.monthUnits : 0);
      if (dayUnits <= 0 && monthUnits <= 0) continue;
      await this.#commands
        .add(counterKeys(scope, spent.day), Math.max(0, dayUnits), Math.max(0, monthUnits), ttl)
        .catch(() => {
          // Redis went away again: the next outage counts from what it last said
        });
    }
  }

  /** How long a day's and a month's counters are kept: past their period's end, by a day. */
  ttls(): CounterTtls {
    this.#clock.tick();
    const now = Date.now();
    return { day: this.#clock.dayEndsAt - now + DAY_MS, month: this.#clock.monthEndsAt - now + DAY_MS };
  }
}
