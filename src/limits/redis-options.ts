import type { Redis, RedisOptions } from "ioredis";

/**
 * Resolves once `redis` is ready, or after `timeoutMs`, with `shared()` then: what a proxy's start waits for
 * before its limits and quotas count in Redis (they count locally meanwhile).
 */
export async function redisReady(redis: Redis, timeoutMs: number, shared: () => boolean): Promise<boolean> {
  if (shared()) return true;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    redis.once("ready", () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return shared();
}

/**
 * How the data plane talks to the Redis of `sharedLimits` (the leased rate limits, the shared served heads):
 * a command while disconnected fails at once instead of waiting in a queue, since each instance then decides
 * alone; commands and connections have deadlines; reconnections back off to 5 s. `keyPrefix` keeps each
 * user's keys apart.
 */
export function sharedRedisOptions(keyPrefix: string): RedisOptions {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 1_000,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(100 * 2 ** attempt, 5_000),
    keyPrefix,
  };
}
