/**
 * The upper bounds, in milliseconds, of the ten buckets the gateway's time per call falls in; the last is
 * everything slower. A percentile read from them is the bound of the bucket it falls in: coarse, and
 * mergeable across proxies and days by adding, which exact percentiles are not.
 */
export const LATENCY_BOUNDS_MS = [10, 25, 50, 100, 250, 500, 1000, 2500, 5000, Number.POSITIVE_INFINITY];

/** The stores' columns of the buckets, `lat0` to `lat9` (store/sqlite-migrations.ts). */
export const LATENCY_COLUMNS = LATENCY_BOUNDS_MS.map((_, i) => `lat${i}`);

import { ERRORS, type ErrorSpec } from "../errors/table.js";
import { type BatchPart, weightOf } from "../plans/compute-units.js";

/** One key's calls of one method on one label on one day. */
export interface MethodRow {
  readonly key: string;
  readonly day: string;
  readonly label: string;
  readonly method: string;
  readonly calls: number;
  readonly units: number;
  readonly errors: number;
  readonly msSum: number;
  /** Calls per LATENCY_BOUNDS_MS bucket. */
  readonly latency: readonly number[];
}

/** One key's refusals and failures of one error code on one label on one day. */
export interface CodeRow {
  readonly key: string;
  readonly day: string;
  readonly label: string;
  readonly code: string;
  readonly count: number;
}

/**
 * What a request adds to the detail: its method or route, its error code, its time. A batch's calls are
 * counted by their methods (`parts`), its refused calls under `other`, as a refused single call is.
 */
export interface CallDetail {
  readonly method: string;
  /** A batch's calls that passed their checks, by method (plans/compute-units.ts batchParts). */
  readonly parts?: readonly BatchPart[] | undefined;
  readonly code: string | undefined;
  /** The gateway's whole time for it; undefined when it has none (a WebSocket message). */
  readonly ms: number | undefined;
  /** A batch's calls refused on their own, by their codes: each is one error of its code. */
  readonly refusedCodes?: readonly string[] | undefined;
}

interface MethodCounts {
  calls: number;
  units: number;
  errors: number;
  msSum: number;
  latency: number[];
}

/**
 * Calls per key, label and method, and errors per code, for one day: what the dashboard's overview reads.
 * Kept beside UsageCounter's rows (keys/usage.ts) and flushed with them. The methods a key can call are
 * the registry's, so the rows a key makes in a day are bounded.
 */
export class UsageDetail {
  #methods = new Map<string, MethodCounts>();
  #codes = new Map<string, number>();

  add(key: string, label: string, calls: number, units: number, errors: number, detail: CallDetail): void {
    const { parts } = detail;
    // a request the gateway refused before any node (a rate, a quota, a setting: a 4xx) took no time of a
    // node's: timed, its millisecond would flatter its method's times on the dashboard
    const ms = refusedAtOnce(detail.code) ? undefined : detail.ms;
    if (parts === undefined) this.#addMethod(key, label, detail.method, calls, units, errors, ms);
    else {
      // when the request failed (errors beyond its refused calls) every call that passed is an error of
      // its method
      const refused = detail.refusedCodes?.length ?? 0;
      const failed = errors > refused;
      const shares = sharedUnits(units, parts);
      parts.forEach((part, i) => {
        this.#addMethod(key, label, part.method, part.calls, shares[i] ?? 0, failed ? part.calls : 0, ms);
      });
      // a call refused on its own before any node (its key's settings) is counted, not timed: the batch's
      // time was its other calls' (ARCHIVE_REQUIRED's were asked of a node, and are)
      const atOnce = (detail.refusedCodes ?? []).filter(refusedAtOnce).length;
      if (atOnce > 0) this.#addMethod(key, label, "other", atOnce, 0, atOnce, undefined);
      if (refused > atOnce) this.#addMethod(key, label, "other", refused - atOnce, 0, refused - atOnce, ms);
    }
    // Errors by code count calls, as the errors beside them do: a batch's calls refused on their own each
    // under their code, the rest of its errors under the request's (a rate, a quota, a node that failed)
    const own = detail.refusedCodes ?? [];
    for (const code of own) this.#count(key, label, code, 1);
    const rest = own.length === 0 ? Math.max(1, errors) : errors - own.length;
    if (detail.code !== undefined && rest > 0) this.#count(key, label, detail.code, rest);
  }

  /** Each call is timed at its request's time: a batch's calls each took the whole batch's. */
  #addMethod(
    key: string,
    label: string,
    method: string,
    calls: number,
    units: number,
    errors: number,
    ms: number | undefined,
  ): void {
    const id = `${key}\n${label}\n${method}`;
    let counts = this.#methods.get(id);
    if (counts === undefined) {
      counts = { calls: 0, units: 0, errors: 0, msSum: 0, latency: LATENCY_BOUNDS_MS.map(() => 0) };
      this.#methods.set(id, counts);
    }
    counts.calls += calls;
    counts.units += units;
    counts.errors += errors;
    if (ms !== undefined) {
      counts.msSum += Math.round(ms) * calls;
      const bucket = LATENCY_BOUNDS_MS.findIndex((bound) => ms <= bound);
      (counts.latency as number[])[bucket] = (counts.latency[bucket] ?? 0) + calls;
    }
  }

  #count(key: string, label: string, code: string, n: number): void {
    const codeId = `${key}\n${label}\n${code}`;
    this.#codes.set(codeId, (this.#codes.get(codeId) ?? 0) + n);
  }

  /** The rows counted since the last call, for `day`; the counts start again. */
  take(day: string): { methods: MethodRow[]; codes: CodeRow[] } {
    const methods: MethodRow[] = [];
    for (const [id, c] of this.#methods) {
      const [key = "", label = "", method = ""] = id.split("\n");
      methods.push({ key, day, label, method, ...c });
    }
    const codes: CodeRow[] = [];
    for (const [id, count] of this.#codes) {
      const [key = "", label = "", code = ""] = id.split("\n");
      codes.push({ key, day, label, code, count });
    }
    this.#methods = new Map();
    this.#codes = new Map();
    return { methods, codes };
  }
}

/**
 * A batch's units shared by its methods' weights, in whole units that add up to them: each its share rounded
 * down, then one more for the largest remainders (rounding each alone may leave the last a negative rest).
 */
export function sharedUnits(units: number, parts: readonly BatchPart[]): number[] {
  const weights = weightOf(parts);
  if (weights === 0) return parts.map((_, i) => (i === 0 ? units : 0));
  const exact = parts.map((part) => (units * part.weight * part.calls) / weights);
  const shares = exact.map(Math.floor);
  let left = units - shares.reduce((sum, share) => sum + share, 0);
  const byRemainder = exact
    .map((value, i) => [value - Math.floor(value), i] as const)
    .sort((a, b) => b[0] - a[0]);
  for (const [, i] of byRemainder) {
    if (left <= 0) break;
    shares[i] = (shares[i] ?? 0) + 1;
    left--;
  }
  return shares;
}

/** Rows of the same key, day, label and method (or code) added into one: a store upserts each once. */
export function mergedDetail(
  methods: readonly MethodRow[],
  codes: readonly CodeRow[],
): {
  methods: MethodRow[];
  codes: CodeRow[];
} {
  return {
    methods: mergedRows(
      methods,
      (row) => `${row.key}\n${row.day}\n${row.label}\n${row.method}`,
      (seen, row) => ({
        ...seen,
        calls: seen.calls + row.calls,
        units: seen.units + row.units,
        errors: seen.errors + row.errors,
        msSum: seen.msSum + row.msSum,
        latency: seen.latency.map((n, i) => n + (row.latency[i] ?? 0)),
      }),
    ),
    codes: mergedRows(
      codes,
      (row) => `${row.key}\n${row.day}\n${row.label}\n${row.code}`,
      (seen, row) => ({ ...seen, count: seen.count + row.count }),
    ),
  };
}

/** Rows of the same `idOf` added into one by `add`, in the order each id first came. */
export function mergedRows<Row>(
  rows: readonly Row[],
  idOf: (row: Row) => string,
  add: (seen: Row, row: Row) => Row,
): Row[] {
  const byId = new Map<string, Row>();
  for (const row of rows) {
    const id = idOf(row);
    const seen = byId.get(id);
    byId.set(id, seen === undefined ? row : add(seen, row));
  }
  return [...byId.values()];
}

/** The bound of the bucket that holds the `share` (0.5, 0.95) of the calls; undefined without calls. */
export function percentileOf(latency: readonly number[], share: number): number | undefined {
  const total = latency.reduce((sum, n) => sum + n, 0);
  if (total === 0) return undefined;
  let seen = 0;
  for (const [i, n] of latency.entries()) {
    seen += n;
    if (seen >= total * share) return LATENCY_BOUNDS_MS[i];
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1];
}

/**
 * Whether a request's error is a refusal of the caller's (a 4xx) answered without a node's time. Not those
 * that may come after one: a caller that left while a node worked (499), a split range whose merged answer
 * was too large, an old read a full node answered "no such state" first.
 */
function refusedAtOnce(code: string | undefined): boolean {
  const spec = code === undefined ? undefined : (ERRORS as Record<string, ErrorSpec>)[code];
  return spec !== undefined && spec.status < 500 && !AFTER_A_NODE.has(code as string);
}

const AFTER_A_NODE: ReadonlySet<string> = new Set([
  "CLIENT_CLOSED",
  "BLOCK_RANGE_TOO_LARGE",
  "ARCHIVE_REQUIRED",
]);
