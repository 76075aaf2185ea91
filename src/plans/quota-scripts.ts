import type { Redis } from "ioredis";

// A scope's day and month counters in Redis, moved together: it grants what fits under both quotas, at most
// ARGV[4] and never less than ARGV[3] (else nothing), and a quarter of what is left once little is, so the
// leases instances hold near the end are small. Answers the grant, both counters after it, and 1 when the
// scope's month was never started from the store (KEYS[3] missing: a new month, or counters Redis lost).
const LEASE_SCRIPT = `
local day = tonumber(redis.call('GET', KEYS[1]) or '0')
local month = tonumber(redis.call('GET', KEYS[2]) or '0')
local unstarted = redis.call('EXISTS', KEYS[3]) == 0 and 1 or 0
local daily = tonumber(ARGV[1])
local monthly = tonumber(ARGV[2])
local need = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local left = want * 4
if daily > 0 then left = math.min(left, daily - day) end
if monthly > 0 then left = math.min(left, monthly - month) end
if left < need then return {0, day, month, unstarted} end
local grant = math.min(want, math.max(need, math.floor(left / 4)))
day = redis.call('INCRBY', KEYS[1], grant)
month = redis.call('INCRBY', KEYS[2], grant)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[5]))
redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[6]))
return {grant, day, month, unstarted}
`;

/**
 * Adds ARGV[1] units to the day's counter (KEYS[1]) and ARGV[2] to the month's (KEYS[2]), keeping each for
 * ARGV[3] and ARGV[4] ms; with `onlyThere`, only to a counter Redis has.
 */
const addUnits = (onlyThere: boolean) => `
for i = 1, 2 do
  local units = tonumber(ARGV[i])
  if units > 0${onlyThere ? " and redis.call('EXISTS', KEYS[i]) == 1" : ""} then
    redis.call('INCRBY', KEYS[i], units)
    redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[2 + i]))
  end
end
`;

// Starts a scope's month from the store, once (KEYS[3] set with it): the day's and the month's spend the
// store holds are added to the counters. 0 when another instance did it first.
const START_SCRIPT = `
if not redis.call('SET', KEYS[3], '1', 'NX', 'PX', tonumber(ARGV[4])) then return 0 end
${addUnits(false)}
return 1
`;

// Adds what an instance served alone while Redis was away to the counters Redis kept (one it no longer has
// starts from the store).
const ADD_SCRIPT = `${addUnits(true)}
return 1
`;

// The Redis's life: a name set once, gone with its data. An instance back from an outage that finds another
// name knows the counters it would add to are not the ones it left.
const LIFE_SCRIPT = `
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])
`;

/** A scope's counters: its day's, its month's, and whether its month was started from the store. */
export interface CounterKeys {
  readonly day: string;
  readonly month: string;
  readonly started: string;
}

/** How long a day's and a month's counters are kept: past their period's end. */
export interface CounterTtls {
  readonly day: number;
  readonly month: number;
}

export function counterKeys(scope: string, day: string): CounterKeys {
  const month = day.slice(0, 7);
  return { day: `${scope}:${day}`, month: `${scope}:${month}`, started: `${scope}:${month}:started` };
}

/** The quota scripts, defined on `redis`. */
export interface QuotaCommands {
  /** The grant, the day's and month's counters after it, and 1 when the month was not started from the store. */
  lease(
    keys: CounterKeys,
    limits: { readonly daily: number; readonly monthly: number },
    need: number,
    want: number,
    ttl: CounterTtls,
  ): Promise<[number, number, number, number]>;
  start(keys: CounterKeys, day: number, month: number, ttl: CounterTtls): Promise<number>;
  add(keys: CounterKeys, day: number, month: number, ttl: CounterTtls): Promise<number>;
  /** Redis's life's name: `candidate` when this call named it. */
  life(candidate: string): Promise<string>;
}

type Command = (...args: (string | number)[]) => Promise<unknown>;

export function quotaCommands(redis: Redis): QuotaCommands {
  redis.defineCommand("gatewayQuotaLease", { numberOfKeys: 3, lua: LEASE_SCRIPT });
  redis.defineCommand("gatewayQuotaStart", { numberOfKeys: 3, lua: START_SCRIPT });
  redis.defineCommand("gatewayQuotaAdd", { numberOfKeys: 2, lua: ADD_SCRIPT });
  redis.defineCommand("gatewayQuotaLife", { numberOfKeys: 1, lua: LIFE_SCRIPT });
  const command = (name: string) =>
    (redis as unknown as Record<string, Command>)[name]?.bind(redis) as Command;
  const [lease, start, add, life] = ["Lease", "Start", "Add", "Life"].map((n) => command(`gatewayQuota${n}`));
  return {
    lease: (k, limits, need, want, ttl) =>
      lease?.(
        k.day,
        k.month,
        k.started,
        limits.daily,
        limits.monthly,
        need,
        want,
        ttl.day,
        ttl.month,
      ) as Promise<[number, number, number, number]>,
    start: (k, day, month, ttl) =>
      start?.(k.day, k.month, k.started, day, month, ttl.day, ttl.month) as Promise<number>,
    add: (k, day, month, ttl) => add?.(k.day, k.month, day, month, ttl.day, ttl.month) as Promise<number>,
    life: (candidate) => life?.("life", candidate) as Promise<string>,
  };
}
