import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { reconnectDelay } from "./reconnect-backoff.js";
import {
  type CallDetail,
  type CodeRow,
  type MethodRow,
  mergedDetail,
  mergedRows,
  UsageDetail,
} from "./usage-detail.js";

/** One row of counts: a key's calls and compute units on one label on one UTC day (YYYY-MM-DD). */
export interface UsageRow {
  readonly key: string;
  readonly day: string;
  readonly label: string;
  readonly calls: number;
  readonly errors: number;
  /** The compute units served (docs/compute-units.md): what a plan's quota and a bill count. */
  readonly units: number;
}

/**
 * What the data plane counts a keyed call with. `heldAt`: when its quota took its units (plans/quota-hold.ts),
 * whose UTC day the call counts in, as its quota counted it (a call held before midnight and answered after
 * it); none, the day it is counted.
 */
export interface UsageRecorder {
  record(
    key: string,
    label: string,
    calls: number,
    errors: number,
    units: number,
    detail?: CallDetail,
    heldAt?: number,
  ): void;
}

/** One flush's counts, with the per-method and per-code detail (keys/usage-detail.ts), under the flush's id. */
export interface UsageBatch {
  /** Unique to the flush: the counter's own random id and the flush's number. */
  readonly id: string;
  readonly rows: readonly UsageRow[];
  readonly methods: readonly MethodRow[];
  readonly codes: readonly CodeRow[];
}

/**
 * Where a proxy's counts go: added to what the store holds, one batch at a time, in one transaction that
 * records the batch's id (table usage_flushes). A batch whose id the store holds already is not added again:
 * a batch sent again after a write whose outcome was unknown (a query timeout: the server may have
 * committed it after all) counts once.
 */
export interface UsageSink {
  add(batch: UsageBatch): Promise<void>;
  close(): Promise<void>;
}

/**
 * How long a store keeps the ids of the batches it added: the sinks delete older ones as they add a batch.
 * A batch is sent again within a flush interval of its failure, so only a proxy cut off from the store for a
 * day after a write whose answer it lost could count that batch twice.
 */
export const FLUSH_IDS_KEPT_MS = 86_400_000;

interface Counts {
  calls: number;
  errors: number;
  units: number;
}

const DAY_MS = 86_400_000;

/**
 * Calls and compute units per key, per label, per UTC day, errors apart, counted in memory and flushed to the store in one
 * batch every `flushIntervalMs` and at a graceful stop: never one write per request. A crash loses at most
 * one interval's counts. A batch whose write failed is sent again as it was, under the same id, until the
 * store has taken it: a write that timed out may still have been committed, and the id lets the store add
 * it only once. What was counted meanwhile waits for the batch after it. Counting is two Map lookups and two
 * additions; the day is read from the clock only when it may have turned.
 */
export class UsageCounter implements UsageRecorder {
  readonly #sink: UsageSink;
  readonly #now: () => number;
  /** key → label → counts, for `#day`. */
  #counts = new Map<string, Map<string, Counts>>();
  #day = "";
  #dayStartsAt = 0;
  #dayEndsAt = 0;
  /** Rows of a day that turned before they were flushed. */
  #earlier: UsageRow[] = [];
  #timer: NodeJS.Timeout | undefined;
  readonly #detail = new UsageDetail();
  #earlierDetail: { methods: MethodRow[]; codes: CodeRow[] } = { methods: [], codes: [] };
  #flushing: Promise<void> = Promise.resolve();
  /** This counter's part of its batches' ids: random, so no other process (on any host) draws it. */
  readonly #instance = randomBytes(12).toString("base64url");
  #batches = 0;
  /** The batch written last if the store may not have taken it: sent again before any other. */
  #unsent: UsageBatch | undefined;

  /** `onError` hears of a flush that failed; its batch is sent again with the next flush. */
  constructor(
    sink: UsageSink,
    flushIntervalMs: number,
    onError: (error: Error) => void = () => {},
    now: () => number = Date.now,
  ) {
    this.#sink = sink;
    this.#now = now;
    this.#turnDay(now());
    this.#timer = setInterval(() => this.flush().catch(onError), flushIntervalMs);
    this.#timer.unref();
  }

  record(
    key: string,
    label: string,
    calls: number,
    errors: number,
    units: number,
    detail?: CallDetail,
    heldAt?: number,
  ): void {
    const now = this.#now();
    if (now >= this.#dayEndsAt) this.#turnDay(now);
    if (heldAt !== undefined && heldAt < this.#dayStartsAt) {
      this.#recordEarlier(key, label, calls, errors, units, detail, heldAt);
      return;
    }
    if (detail !== undefined) this.#detail.add(key, label, calls, units, errors, detail);
    let byLabel = this.#counts.get(key);
    if (byLabel === undefined) {
      byLabel = new Map();
      this.#counts.set(key, byLabel);
    }
    const counts = byLabel.get(label);
    if (counts === undefined) byLabel.set(label, { calls, errors, units });
    else {
      counts.calls += calls;
      counts.errors += errors;
      counts.units += units;
    }
  }

  /** A call whose quota took its units on a day that has ended since: counted in that day, where its quota spent them. */
  #recordEarlier(
    key: string,
    label: string,
    calls: number,
    errors: number,
    units: number,
    detail: CallDetail | undefined,
    heldAt: number,
  ): void {
    const day = new Date(heldAt).toISOString().slice(0, 10);
    this.#earlier.push({ key, day, label, calls, errors, units });
    if (detail === undefined) return;
    const earlier = new UsageDetail();
    earlier.add(key, label, calls, units, errors, detail);
    this.#keepDetail(earlier.take(day));
  }

  /** Writes what was counted since the last flush, after any flush under way; rejects if the store refuses. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.catch(() => {}).then(() => this.#write());
    return this.#flushing;
  }

  /**
   * The last flush, tried again (with the store's reconnect backoff) for up to `waitForStoreMs` while the
   * store refuses it: a stop made during an outage would otherwise drop everything counted since the store
   * went. `onWait` hears of the first failure; the last one rejects.
   */
  async close(waitForStoreMs = 0, onWait: (error: Error) => void = () => {}): Promise<void> {
    clearInterval(this.#timer);
    try {
      const deadline = this.#now() + waitForStoreMs;
      for (let attempt = 0; ; attempt++) {
        try {
          await this.flush();
          break;
        } catch (error) {
          const left = deadline - this.#now();
          if (left <= 0) throw error;
          if (attempt === 0) onWait(error as Error);
          await sleep(Math.min(left, reconnectDelay(attempt)));
        }
      }
    } finally {
      await this.#sink.close();
    }
  }

  async #write(): Promise<void> {
    if (this.#unsent !== undefined) {
      await this.#sink.add(this.#unsent);
      this.#unsent = undefined;
    }
    const batch = this.#take();
    if (batch === undefined) return;
    this.#unsent = batch;
    await this.#sink.add(batch);
    this.#unsent = undefined;
  }

  /** What was counted since the last batch, as the next batch; undefined if nothing was. */
  #take(): UsageBatch | undefined {
    // Rows of a day that turned are in #earlier; one row per key, day and label.
    const rows = merged([...this.#earlier, ...rowsOf(this.#counts, this.#day)]);
    const today = this.#detail.take(this.#day);
    const detail = mergedDetail(
      [...this.#earlierDetail.methods, ...today.methods],
      [...this.#earlierDetail.codes, ...today.codes],
    );
    this.#earlier = [];
    this.#counts = new Map();
    this.#earlierDetail = { methods: [], codes: [] };
    if (rows.length === 0 && detail.methods.length === 0 && detail.codes.length === 0) return undefined;
    this.#batches += 1;
    return { id: `${this.#instance}:${this.#batches}`, rows, ...detail };
  }

  /** Detail of a day that turned, kept for the next batch with what was counted since. */
  #keepDetail(detail: { methods: MethodRow[]; codes: CodeRow[] }): void {
    this.#earlierDetail = mergedDetail(
      [...detail.methods, ...this.#earlierDetail.methods],
      [...detail.codes, ...this.#earlierDetail.codes],
    );
  }

  #turnDay(now: number): void {
    this.#earlier.push(...rowsOf(this.#counts, this.#day));
    const ended = this.#detail.take(this.#day);
    this.#keepDetail(ended);
    this.#counts = new Map();
    this.#day = new Date(now).toISOString().slice(0, 10);
    this.#dayStartsAt = Math.floor(now / DAY_MS) * DAY_MS;
    this.#dayEndsAt = (Math.floor(now / DAY_MS) + 1) * DAY_MS;
  }
}

function rowsOf(counts: ReadonlyMap<string, ReadonlyMap<string, Counts>>, day: string): UsageRow[] {
  const rows: UsageRow[] = [];
  for (const [key, byLabel] of counts)
    for (const [label, { calls, errors, units }] of byLabel)
      rows.push({ key, day, label, calls, errors, units });
  return rows;
}

/** Rows with the same key, day and label added into one: a store adds a batch in one statement. */
function merged(rows: readonly UsageRow[]): UsageRow[] {
  return mergedRows(
    rows,
    (row) => `${row.key}\n${row.day}\n${row.label}`,
    (seen, row) => ({
      ...seen,
      calls: seen.calls + row.calls,
      errors: seen.errors + row.errors,
      units: seen.units + row.units,
    }),
  );
}
