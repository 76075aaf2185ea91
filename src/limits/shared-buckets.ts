import type { Redis } from "ioredis";
import type { RateSpec, SharedLimitsConfig } from "../config/types.js";
import type { Logger } from "../log.js";
import { forgetEarliest, keptAfterSweep } from "./evict.js";
import { reconnectWhenSilent, redisReady, sharedRedis, sharedRedisOptions } from "./redis-options.js";
import { type RateDecision, type RateLimiter, TokenBuckets } from "./token-bucket.js";

// The global bucket, in Redis: refilled by Redis's own clock (so instances' clocks do not matter), it grants
// up to ARGV[3] whole tokens and says how long until the next one when it runs dry. An idle bucket expires
// once it would be full again, which is the same as its absence.
const LEASE_SCRIPT = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 't', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rate / 1000)
  at = now
end
local granted = math.max(0, math.min(want, math.floor(tokens)))
tokens = tokens - granted
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'at', at)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
local wait = 0
if granted < want then wait = math.ceil((1 - tokens) * 1000 / rate) end
return {granted, wait}
`;

interface Lease {
  /** Tokens this instance may spend; below zero while it spends on credit. */
  balance: number;
  /** A lease asked of Redis and not answered yet, and since when. */
  pending: boolean;
  askedAt: number;
  /** Whether Redis's last answer left the global bucket dry: then no credit until it refills. */
  dry: boolean;
  /** When to ask again after a dry answer or a failure. */
  nextAt: number;
  /** Whether the last lease failed (Redis connected but not answering): decide locally until one succeeds. */
  failing: boolean;
  usedAt: number;
  /**
   * A key this instance has not seen for as long as its bucket takes to refill: its bucket in Redis is
   * most likely full, so it may spend up to its burst on credit (a dApp's page load sends its calls at
   * once) until it has spent its burst since or Redis said the bucket is dry. A lease that paid the credit
   * back does not end it: the page load's later calls, arriving as the first lease lands, were refused
   * at a lease's credit while Redis held the rest of the burst.
   */
  open: boolean;
  /** What the key spent on this instance since its lease opened: no more than its burst on credit. */
  spentOpen: number;
}

/** A lease still unanswered after this long is given up on for the decision at hand (Redis is slow). */
const LEASE_WAIT_MS = 250;
/** A lease not used for this long is dropped; its few tokens are not worth keeping. */
const IDLE_MS = 30_000;

type LeaseCommand = (
  key: string,
  perSecond: number,
  burst: number,
  want: number,
) => Promise<[number, number]>;

/**
 * Rate limits shared by every proxy instance and worker through Redis, with no Redis round trip on a
 * request's path. Each instance leases a key's tokens from the key's global bucket in Redis, `leaseMs` of
 * its rate at a time, and spends them locally; it asks for the next lease when half of one is left, so a
 * busy key's requests find tokens already there. A key an instance has not seen for as long as its bucket
 * takes to refill may spend up to its burst on credit while its first lease is on the way (its bucket is
 * most likely full); the credit is paid back from the leases. How far a key can go over its rate: that
 * credit once per idle spell, and one lease and a half per instance after it (docs/deployment.md).
 * proxyd and rate-limiter-flexible ask Redis on every request instead.
 *
 * While Redis cannot be reached (or a lease is slow), each instance decides alone with in-process buckets
 * at `fallbackShare` of the key's rate; it reconnects with backoff and shares again once Redis is back.
 */
export class SharedTokenBuckets implements RateLimiter {
  readonly #redis: Redis;
  readonly #lease: LeaseCommand;
  readonly #config: SharedLimitsConfig;
  readonly #logger: Logger;
  readonly #local: TokenBuckets;
  readonly #leases = new Map<string, Lease>();
  readonly #maxEntries: number;
  readonly #now: () => number;
  #shared = false;
  /** Told of each failed lease: a connection gone silent is made anew. */
  readonly #silent: (error: unknown) => void;
  /** Whether Redis was ever reached: the first time is "reachable", not "again". */
  #wasShared = false;
  #lastError = "";
  /** Leases asked of Redis, by outcome, for the metrics. */
  readonly leases = { granted: 0, dry: 0, failed: 0 };

  constructor(config: SharedLimitsConfig, logger: Logger, maxEntries = 100_000) {
    this.#config = config;
    this.#logger = logger;
    this.#maxEntries = maxEntries;
    this.#now = performance.now.bind(performance);
    this.#local = new TokenBuckets(maxEntries);
    // a command while disconnected fails at once: the request is decided locally meanwhile
    this.#redis = sharedRedis(config.redis, sharedRedisOptions("gateway:rate:"));
    this.#redis.defineCommand("gatewayLease", { numberOfKeys: 1, lua: LEASE_SCRIPT });
    this.#lease = (this.#redis as unknown as { gatewayLease: LeaseCommand }).gatewayLease.bind(this.#redis);
    this.#silent = reconnectWhenSilent(this.#redis, (reason) => {
      this.#lastError = reason;
    });
    // an error from before is not why a later outage began
    this.#redis.on("ready", () => {
      this.#lastError = "";
      this.#setShared(true);
    });
    this.#redis.on("close", () => this.#setShared(false));
    // Errors arrive with every failed reconnection; the state change is what is logged, once, with the
    // last error's message as its reason (a refused connection, NOAUTH: ioredis's messages hold no secret)
    this.#redis.on("error", (error: Error) => {
      this.#lastError = error.message;
    });
  }

  /** Whether a lease of the key's tokens is on its way from Redis. */
  leasePending(id: string): boolean {
    return this.#leases.get(id)?.pending === true;
  }

  /** Why Redis last failed, for the log: its client's last error message. */
  get lastError(): string {
    return this.#lastError;
  }

  /** Whether limits are shared through Redis now (false: each instance decides alone). */
  get shared(): boolean {
    return this.#shared;
  }

  /** Resolves once Redis answered, or after `timeoutMs` with limits still local. */
  ready(timeoutMs: number): Promise<boolean> {
    return redisReady(this.#redis, timeoutMs, () => this.#shared);
  }

  take(id: string, rate: RateSpec, cost = 1): RateDecision {
    if (!this.#shared) return this.#local.take(id, this.#fallback(rate), cost);
    const now = this.#now();
    const lease = this.#leaseOf(id, now);
    // idle for as long as a bucket takes to refill: whatever this instance or another spent is back
    if (now - lease.usedAt >= (rate.burst / rate.perSecond) * 1000 && !lease.pending) {
      lease.open = true;
      lease.spentOpen = 0;
      lease.dry = false;
    }
    lease.usedAt = now;
    const size = leaseSize(rate, this.#config.leaseMs);
    if (lease.balance >= cost) {
      lease.balance -= cost;
      if (lease.open) lease.spentOpen += cost;
      if (lease.balance < size / 2) this.#renew(id, lease, rate, size, now);
      return { allowed: true, remaining: Math.floor(lease.balance), retryAfter: 0 };
    }
    if (lease.failing || (lease.pending && now - lease.askedAt > LEASE_WAIT_MS)) {
      if (now >= lease.nextAt) this.#renew(id, lease, rate, size, now);
      return this.#local.take(id, this.#fallback(rate), cost);
    }
    // On credit, while the key's bucket has not run dry: up to a lease, or the request's own cost (at most
    // its burst, stage 5's check), which the renewal asks Redis for. A request costing more than a lease (a
    // batch) would otherwise wait for leases of a lease's size to add up, refused meanwhile.
    // A dry bucket refills: once Redis's wait is over, credit is as before (the first request after an idle
    // spell was refused, and only then asked for a lease).
    const dry = lease.dry && now < lease.nextAt;
    const credit = Math.max(size, cost);
    const open = lease.open && lease.spentOpen + cost <= rate.burst;
    if (!dry && (open || lease.balance - cost >= -credit)) {
      lease.balance -= cost;
      if (lease.open) lease.spentOpen += cost;
      this.#renew(id, lease, rate, size, now);
      return { allowed: true, remaining: 0, retryAfter: 0 };
    }
    if (now >= lease.nextAt) this.#renew(id, lease, rate, size, now);
    const wait = Math.max(lease.nextAt - now, ((cost - lease.balance) / rate.perSecond) * 1000);
    return { allowed: false, remaining: 0, retryAfter: Math.max(1, Math.ceil(wait / 1000)) };
  }

  giveBack(id: string, rate: RateSpec, cost: number): void {
    if (!this.#shared) {
      this.#local.giveBack(id, this.#fallback(rate), cost);
      return;
    }
    const lease = this.#leases.get(id);
    // a take decided by the local fallback (a failing or slow lease) took from the local bucket
    if (
      lease === undefined ||
      lease.failing ||
      (lease.pending && this.#now() - lease.askedAt > LEASE_WAIT_MS)
    ) {
      this.#local.giveBack(id, this.#fallback(rate), cost);
      return;
    }
    // back into this instance's lease, never past a lease's size: the tokens were Redis's to lend
    lease.balance = Math.min(
      lease.balance + cost,
      Math.max(lease.balance, leaseSize(rate, this.#config.leaseMs)),
    );
    if (lease.open) lease.spentOpen = Math.max(0, lease.spentOpen - cost);
  }

  async close(): Promise<void> {
    this.#redis.removeAllListeners("close");
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }

  #renew(id: string, lease: Lease, rate: RateSpec, size: number, now: number): void {
    if (lease.pending) return;
    lease.pending = true;
    lease.askedAt = now;
    const want = size + Math.max(0, Math.ceil(-lease.balance));
    this.#lease(id, rate.perSecond, rate.burst, want).then(
      ([granted, waitMs]) => {
        lease.pending = false;
        lease.failing = false;
        lease.balance += granted;
        lease.dry = granted < want;
        lease.nextAt = lease.dry ? this.#now() + waitMs : 0;
        if (lease.dry) this.leases.dry += 1;
        else this.leases.granted += 1;
        if (lease.dry) lease.open = false;
        // what was spent on credit while this lease was on its way is paid back at once
        else if (lease.open && lease.balance < 0) this.#renew(id, lease, rate, size, this.#now());
      },
      (error: unknown) => {
        this.#silent(error);
        lease.pending = false;
        lease.failing = true;
        // Not asked again at once: a failing Redis is not hammered by every request.
        lease.nextAt = this.#now() + LEASE_WAIT_MS;
        this.leases.failed += 1;
      },
    );
  }

  #leaseOf(id: string, now: number): Lease {
    let lease = this.#leases.get(id);
    if (lease === undefined) {
      if (this.#leases.size >= this.#maxEntries) this.#sweep(now);
      lease = {
        balance: 0,
        pending: false,
        askedAt: 0,
        dry: false,
        nextAt: 0,
        failing: false,
        usedAt: now,
        open: true,
        spentOpen: 0,
      };
      this.#leases.set(id, lease);
    }
    return lease;
  }

  /**
   * Frees at least an eighth of a full table (a flood of new ids sweeps once per so many of them): idle
   * leases, then the least recently used. Never all: a forgotten lease's debt is forgiven and its key given
   * a burst on credit again, which a flood of public clients' addresses must not do for every key at once.
   */
  #sweep(now: number): void {
    const leases = this.#leases;
    for (const [id, lease] of leases) if (!lease.pending && now - lease.usedAt > IDLE_MS) leases.delete(id);
    forgetEarliest(leases, keptAfterSweep(this.#maxEntries), (lease) => lease.usedAt);
  }

  #fallback(rate: RateSpec): RateSpec {
    const share = this.#config.fallbackShare;
    return { perSecond: rate.perSecond * share, burst: Math.max(1, rate.burst * share) };
  }

  #setShared(shared: boolean): void {
    if (shared === this.#shared) return;
    this.#shared = shared;
    // Leases held from before an outage are forgotten: Redis may have lost its buckets too.
    this.#leases.clear();
    if (shared) {
      const again = this.#wasShared ? " again" : "";
      this.#wasShared = true;
      this.#logger.log("info", `shared rate limits: Redis reachable, limits shared${again}`);
    } else
      this.#logger.log("warn", "shared rate limits: Redis unreachable, each instance limits alone", {
        fallbackShare: this.#config.fallbackShare,
        // a clean shutdown (redis-cli shutdown, a restart) closes the connection with no error
        reason: this.#lastError || "Redis closed the connection",
      });
  }
}

/** `leaseMs` of the key's rate, in whole tokens, at least one and at most its burst. */
function leaseSize(rate: RateSpec, leaseMs: number): number {
  return Math.max(1, Math.min(Math.floor(rate.burst), Math.ceil((rate.perSecond * leaseMs) / 1000)));
}
