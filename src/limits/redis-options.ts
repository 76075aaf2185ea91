import { Command, Redis, type RedisOptions } from "ioredis";
import type { Logger } from "../log.js";

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

/**
 * A connection to the Redis of `sharedLimits` (`url`) with `options`. A Redis with fewer databases than the
 * URL's index refuses its SELECT ("ERR DB index is out of range"), and ioredis goes on in database 0, where
 * another deployment's rates, quotas and heads may be: such a connection is dropped instead, and made again
 * with the backoff, so that each instance decides alone, with the refusal as its owner's last error.
 */
export function sharedRedis(url: string, options: RedisOptions): Redis {
  const redis = new Redis(url, options);
  redis.on("error", (error: Error & { command?: { name?: string } }) => {
    if (error.command?.name !== "select") return;
    redis.disconnect(true);
    // the refusal is why it closed, not the commands the drop then failed: the last error its owner reads
    redis.once("close", () => redis.emit("error", new Error(error.message)));
  });
  return redis;
}

/**
 * How long the PING of `reconnectWhenSilent` waits for an answer, whatever the connection's own command
 * timeout: a shared answer's lookup gives up after 50 ms, which a loaded host or a busy Redis passes while
 * the connection is well, and a PING held to that would drop a connection that answers.
 */
export const SILENT_PING_MS = 1_000;

/**
 * What to call with a command's failure on `redis`: after a command timed out, a PING (SILENT_PING_MS)
 * asks whether the connection still answers, and one that does not is dropped and made anew. A connection
 * whose path went silent (a partition drops its bytes, a Redis host died: no FIN, no RST) never closes by
 * itself, so every command on it would time out until the operating system gave up on the socket, and an
 * instance would decide alone for good after Redis was back. A timeout on a connection that still answers
 * (a slow script, a loaded host) changes nothing; the reconnection says Redis is back through `ready`, as
 * after an outage. `dropped` hears why, before the connection closes: its owner's log line says what
 * happened, where it would read a close that no error came before as Redis closing the connection.
 */
export function reconnectWhenSilent(
  redis: Redis,
  dropped?: (reason: string) => void,
): (error: unknown) => void {
  let asking = false;
  const timedOut = (error: unknown) => error instanceof Error && error.message === "Command timed out";
  return (error) => {
    if (asking || !timedOut(error) || redis.status !== "ready") return;
    asking = true;
    // a timer set on the command first is the one it keeps: the connection's commandTimeout sets none then
    const ping = new Command("ping", []);
    ping.setTimeout(SILENT_PING_MS);
    redis.sendCommand(ping);
    ping.promise
      .then(
        () => {},
        (failure: unknown) => {
          if (!timedOut(failure) || redis.status !== "ready") return;
          dropped?.(
            `a command timed out and a PING got no answer within ${SILENT_PING_MS} ms: connection made anew`,
          );
          redis.disconnect(true);
        },
      )
      .finally(() => {
        asking = false;
      });
  };
}

/**
 * The `dropped` of a shared feature's connection that no state change reports (the heads', the answers',
 * the filters'): its drop is logged, naming the connection and why, so that an operator sees the path to
 * Redis went silent. The rate limits' own is logged as their fall to local limits instead. The reason is
 * reconnectWhenSilent's own text: no key, no URL.
 */
export function logDropped(
  logger: Logger | undefined,
  connection: string,
): ((reason: string) => void) | undefined {
  if (logger === undefined) return undefined;
  return (reason) =>
    logger.log("warn", "shared Redis connection went silent, made anew", { connection, reason });
}
