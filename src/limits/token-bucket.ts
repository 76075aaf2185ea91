import type { RateSpec } from "../config/types.js";
import { forgetEarliest, keptAfterSweep } from "./evict.js";

export interface RateDecision {
  readonly allowed: boolean;
  readonly remaining: number;
  /** Seconds until enough tokens for this request are back. */
  readonly retryAfter: number;
}

/** Stage 5's limiter: takes `cost` tokens from the bucket of `id`, refilled at `rate`. */
export interface RateLimiter {
  take(id: string, rate: RateSpec, cost: number): RateDecision;
  /** Puts back what `take` took for a request that was then refused without being served (its quota spent). */
  giveBack(id: string, rate: RateSpec, cost: number): void;
}

interface Bucket {
  tokens: number;
  /** When it was last taken from. */
  updated: number;
  /** The rate it was last taken at: whether it has refilled is judged by its own rate, not a newcomer's. */
  rate: RateSpec;
}

/**
 * Token buckets by an opaque id (a key's id, a client IP), refilled lazily on use, at most `maxEntries`.
 * When the table is full, buckets that have refilled to their burst by their own rate are forgotten (a
 * new bucket starts full, so nothing is lost); if that frees too little, those nearest to refilled go. The
 * table is never emptied whole: a flood of new ids must not hand every other id a fresh burst.
 */
export class TokenBuckets implements RateLimiter {
  readonly #buckets = new Map<string, Bucket>();
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(maxEntries = 100_000, now: () => number = performance.now.bind(performance)) {
    this.#maxEntries = maxEntries;
    this.#now = now;
  }

  take(id: string, rate: RateSpec, cost = 1): RateDecision {
    const now = this.#now();
    let bucket = this.#buckets.get(id);
    if (bucket === undefined) {
      if (this.#buckets.size >= this.#maxEntries) this.#sweep(now);
      bucket = { tokens: rate.burst, updated: now, rate };
      this.#buckets.set(id, bucket);
    } else {
      bucket.tokens = Math.min(rate.burst, bucket.tokens + ((now - bucket.updated) / 1000) * rate.perSecond);
      bucket.updated = now;
      bucket.rate = rate;
    }
    if (bucket.tokens >= cost) {
      bucket.tokens -= cost;
      return { allowed: true, remaining: Math.floor(bucket.tokens), retryAfter: 0 };
    }
    const retryAfter = Math.max(1, Math.ceil((cost - bucket.tokens) / rate.perSecond));
    return { allowed: false, remaining: Math.floor(bucket.tokens), retryAfter };
  }

  giveBack(id: string, rate: RateSpec, cost: number): void {
    const bucket = this.#buckets.get(id);
    if (bucket !== undefined) bucket.tokens = Math.min(rate.burst, bucket.tokens + cost);
  }

  /**
   * Frees at least an eighth of the table (evict.ts), while take() stays one Map lookup. Refilled buckets
   * go first; then those that will have refilled soonest, which forgetting forgives least (a drained bucket
   * of a slow rate, the one a flood would want reset, goes last; among equals, the longest in the table).
   */
  #sweep(now: number): void {
    const buckets = this.#buckets;
    for (const [id, bucket] of buckets) if (fullAt(bucket) <= now) buckets.delete(id);
    forgetEarliest(buckets, keptAfterSweep(this.#maxEntries), fullAt);
  }
}

/** When a bucket is back to its burst by its own rate, if left alone. */
function fullAt(bucket: Bucket): number {
  return bucket.updated + ((bucket.rate.burst - bucket.tokens) / bucket.rate.perSecond) * 1000;
}
