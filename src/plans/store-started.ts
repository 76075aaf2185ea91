import type {
  LocalQuotaLedger,
  QuotaDecision,
  QuotaLedger,
  QuotaLimits,
  QuotaSpentSource,
} from "./quota-ledger.js";

/** How long a call waits for its scope's spend to be read from the store before it is counted anyway. */
export const START_WAIT_MS = 250;

/** A store read, waited for as a lease waits for a month's start: at most START_WAIT_MS at a time. */
export const waited = (read: Promise<void>): Promise<void> =>
  Promise.race([read, new Promise<void>((resolve) => setTimeout(resolve, START_WAIT_MS).unref())]);

/** What a scope had spent when its count here began: the day it was read for, and its day's and month's units. */
export interface StartedAt {
  readonly day: string;
  readonly dayUnits: number;
  readonly monthUnits: number;
}

/**
 * Quotas counted in this process (a LocalQuotaLedger), each scope started from the account store's usage
 * counts when the ledger has no count of it this month: its first call since the process started, since
 * its month turned, or since a reload moved a plan's keys to another scope (`quotaPer`, a plan removed or
 * added), so that none of these gives a spent quota back (docs/plans.md). The first calls wait for the
 * store at most START_WAIT_MS; a slower store's answer is added to what they were counted meanwhile, and
 * one that cannot be read leaves the count where it is. A count with no store starts from zero.
 *
 * Without Redis it is the proxy's ledger; with it, the count of an outage (quota-recovery.ts), whose scopes
 * Redis had answered for are started from Redis's counters (`local.startAt`) and not read.
 */
export class StoreStartedLedger implements QuotaLedger {
  readonly #local: LocalQuotaLedger;
  readonly #source: QuotaSpentSource | undefined;
  readonly #started: (scope: string, at: StartedAt) => void;
  /** The store reads under way, by scope: their scopes' calls wait for them. */
  readonly #reading = new Map<string, Promise<void>>();

  /** `started`: told what each scope read from the store had spent. */
  constructor(
    local: LocalQuotaLedger,
    source: QuotaSpentSource | undefined,
    started: (scope: string, at: StartedAt) => void = () => {},
  ) {
    this.#local = local;
    this.#source = source;
    this.#started = started;
  }

  get local(): LocalQuotaLedger {
    return this.#local;
  }

  /**
   * The read of what `scope` spent this month, to wait for before it is counted; undefined when there is
   * nothing to wait for (counted here already, or no store).
   */
  starting(scope: string): Promise<void> | undefined {
    const source = this.#source;
    if (source === undefined) return undefined;
    const reading = this.#reading.get(scope);
    if (reading !== undefined) return waited(reading);
    if (this.#local.counts(scope)) return undefined;
    const local = this.#local;
    const day = local.today();
    // the scope is counted from now on (at 0 until the store answers): a failed read is not asked again
    // this month, as the calls counted meanwhile are the scope's count
    local.startAt(scope, 0, 0);
    const read = source
      .spent(scope, day)
      .then(
        ({ day: dayUnits, month: monthUnits }) => {
          // a read that outlived its day (or month) adds nothing to the new one's count
          const today = local.today();
          local.startAt(
            scope,
            today === day ? dayUnits : 0,
            today.slice(0, 7) === day.slice(0, 7) ? monthUnits : 0,
          );
          this.#started(scope, { day, dayUnits, monthUnits });
        },
        () => {},
      )
      .finally(() => this.#reading.delete(scope));
    this.#reading.set(scope, read);
    return waited(read);
  }

  take(scope: string, limits: QuotaLimits, cost: number): QuotaDecision | Promise<QuotaDecision> {
    const starting = this.starting(scope);
    if (starting === undefined) return this.#local.take(scope, limits, cost);
    return starting.then(() => this.#local.take(scope, limits, cost));
  }

  adjust(scope: string, limits: QuotaLimits, delta: number, heldAt: number): void {
    this.#local.adjust(scope, limits, delta, heldAt);
  }

  close(): Promise<void> {
    return this.#local.close();
  }
}
