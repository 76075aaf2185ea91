import type { RateSpec } from "../config/types.js";

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
  updated: number;
}

/**
 * Token buckets by an opaque id (a key's id, a client IP), refilled lazily on use. Idle buckets are
 * swept so a flood of distinct ids cannot grow memory without bound.
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
      if (this.#buckets.size >= this.#maxEntries) this.#sweep(now, rate);
      bucket = { tokens: rate.burst, updated: now };
      this.#buckets.set(id, bucket);
    } else {
      bucket.tokens = Math.min(rate.burst, bucket.tokens + ((now - bucket.updated) / 1000) * rate.perSecond);
      bucket.updated = now;
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

  #sweep(now: number, rate: RateSpec): void {
    const full = (rate.burst / rate.perSecond) * 1000;
    for (const [id, bucket] of this.#buckets) if (now - bucket.updated > full) this.#buckets.delete(id);
    if (this.#buckets.size >= this.#maxEntries) this.#buckets.clear();
  }
}
