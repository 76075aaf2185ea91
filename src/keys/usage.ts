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

/** What the data plane counts a keyed call with. */
export interface UsageRecorder {
  record(key: string, label: string, calls: number, errors: number, units: number, detail?: CallDetail): void;
}

/** Where a proxy's counts go: added to what the store holds, one batch at a time. */
export interface UsageSink {
  add(rows: readonly UsageRow[]): Promise<void>;
  /** The per-method and per-code detail (keys/usage-detail.ts), added the same way. */
  addDetail(methods: readonly MethodRow[], codes: readonly CodeRow[]): Promise<void>;
  close(): Promise<void>;
}

interface Counts {
  calls: number;
  errors: number;
  units: number;
}

const DAY_MS = 86_400_000;

/**
 * Calls and compute units per key, per label, per UTC day, errors apart, counted in memory and flushed to the store in one
 * batch every `flushIntervalMs` and at a graceful stop: never one write per request. A crash loses at most
 * one interval's counts. A flush the store refuses (it cannot be reached) keeps its rows for the next one,
 * merged with what was counted since. Counting is two Map lookups and two additions; the day is read from the clock
 * only when it may have turned.
 */
export class UsageCounter implements UsageRecorder {
  readonly #sink: UsageSink;
  readonly #now: () => number;
  /** key → label → counts, for `#day`. */
  #counts = new Map<string, Map<string, Counts>>();
  #day = "";
  #dayEndsAt = 0;
  /** Rows of a day that turned before they were flushed. */
  #earlier: UsageRow[] = [];
  #timer: NodeJS.Timeout | undefined;
  readonly #detail = new UsageDetail();
  #earlierDetail: { methods: MethodRow[]; codes: CodeRow[] } = { methods: [], codes: [] };
  #flushing: Promise<void> = Promise.resolve();

  /** `onError` hears of a flush that failed; its rows wait for the next flush. */
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
  ): void {
    const now = this.#now();
    if (now >= this.#dayEndsAt) this.#turnDay(now);
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

  /** Writes what was counted since the last flush, after any flush under way; rejects if the store refuses. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.catch(() => {}).then(() => this.#write());
    return this.#flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    try {
      await this.flush();
    } finally {
      await this.#sink.close();
    }
  }

  async #write(): Promise<void> {
    const rows = merged([...this.#earlier, ...rowsOf(this.#counts, this.#day)]);
    const today = this.#detail.take(this.#day);
    const detail = mergedDetail(
      [...this.#earlierDetail.methods, ...today.methods],
      [...this.#earlierDetail.codes, ...today.codes],
    );
    this.#earlierDetail = { methods: [], codes: [] };
    if (rows.length > 0) {
      this.#earlier = [];
      this.#counts = new Map();
      try {
        await this.#sink.add(rows);
      } catch (error) {
        // Rows of a day that turned meanwhile were added to #earlier; one row per key, day and label.
        this.#earlier = merged([...rows, ...this.#earlier]);
        this.#keepDetail(detail);
        throw error;
      }
    }
    if (detail.methods.length === 0 && detail.codes.length === 0) return;
    try {
      await this.#sink.addDetail(detail.methods, detail.codes);
    } catch (error) {
      this.#keepDetail(detail);
      throw error;
    }
  }

  /** Detail a flush could not write, kept for the next one with what was counted since. */
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
