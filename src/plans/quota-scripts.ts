import type { Redis } from "ioredis";

// A scope's day and month counters in Redis, moved together: it grants what fits under both quotas, at most
// ARGV[4] and never less than ARGV[3] (else nothing), and a quarter of what is left once little is, so the
// leases instances hold near the end are small. Answers the grant, both counters after it, 1 when the
// scope's month was never started from the store (KEYS[3] missing: a new month, or counters Redis lost).
const LEASE_SCRIPT = `
local day = tonumber(redis.call('GET', KEYS[1]) or '0')
local month = tonumber(redis.call('GET', KEYS[2]) or '0')
local unstarted = redis.call('EXISTS', KEYS[3]) == 0 and 1 or 0
local daily = tonumber(ARGV[1])
local monthly = tonumber(ARGV[2])
local need = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
-- counters of a month not started from the store may have forgotten what was spent (a Redis restarted
-- empty): nothing is granted from them, unless the instance already tried to start it (ARGV[7] = 1)
if unstarted == 1 and ARGV[7] ~= '1' then return {0, day, month, unstarted} end
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

/** Adds ARGV[1] units to the day's counter (KEYS[1]) and ARGV[2] to the month's (KEYS[2]), kept ARGV[3] and ARGV[4] ms. */
const ADD_UNITS = `
for i = 1, 2 do
  local units = tonumber(ARGV[i])
  if units > 0 then
    redis.call('INCRBY', KEYS[i], units)
    redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[2 + i]))
  end
end
`;

// Starts a scope's month from the store, once (KEYS[3] set with it): the day's and the month's spend the
// store holds are added to the counters. 0 when another instance did it first.
const START_SCRIPT = `
if not redis.call('SET', KEYS[3], '1', 'NX', 'PX', tonumber(ARGV[4])) then return 0 end
${ADD_UNITS}
return 1
`;

// Adds what an instance served alone while Redis was away to a scope's counters, when its month was started
// (a day counter not there yet is the day's first: it starts with them); a month not started yet starts from
// the store, whose usage counts hold them. 0 when it was not. A month started from the store while the
// instance was away may hold some of them already: they count twice, and the quota refuses that much early.
const ADD_SCRIPT = `
if redis.call('EXISTS', KEYS[3]) == 0 then return 0 end
${ADD_UNITS}
return 1
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

/** What a lease answered: its grant, the counters after it, and whether the month was started (0) or not. */
export type LeaseAnswer = [granted: number, day: number, month: number, unstarted: number];

/** The quota scripts, defined on `redis`. */
export interface QuotaCommands {
  /** `blind`: granted from the counters even when the month was not started (a start from the store was tried). */
  lease(
    keys: CounterKeys,
    limits: { readonly daily: number; readonly monthly: number },
    need: number,
    want: number,
    ttl: CounterTtls,
    blind?: boolean,
  ): Promise<LeaseAnswer>;
  start(keys: CounterKeys, day: number, month: number, ttl: CounterTtls): Promise<number>;
  add(keys: CounterKeys, day: number, month: number, ttl: CounterTtls): Promise<number>;
  /** Whether Redis takes a write now (a ping would pass a Redis that refuses writes: maxmemory). */
  writable(): Promise<unknown>;
}

type Command = (...args: (string | number)[]) => Promise<unknown>;

export function quotaCommands(redis: Redis): QuotaCommands {
  redis.defineCommand("gatewayQuotaLease", { numberOfKeys: 3, lua: LEASE_SCRIPT });
  redis.defineCommand("gatewayQuotaStart", { numberOfKeys: 3, lua: START_SCRIPT });
  redis.defineCommand("gatewayQuotaAdd", { numberOfKeys: 3, lua: ADD_SCRIPT });
  const command = (name: string) =>
    (redis as unknown as Record<string, Command>)[name]?.bind(redis) as Command;
  const [lease, start, add] = ["Lease", "Start", "Add"].map((n) => command(`gatewayQuota${n}`));
  return {
    lease: (k, limits, need, want, ttl, blind = false) =>
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
        blind ? 1 : 0,
      ) as Promise<LeaseAnswer>,
    start: (k, day, month, ttl) =>
      start?.(k.day, k.month, k.started, day, month, ttl.day, ttl.month) as Promise<number>,
    add: (k, day, month, ttl) =>
      add?.(k.day, k.month, k.started, day, month, ttl.day, ttl.month) as Promise<number>,
    writable: () => redis.set("writable", "1", "PX", 5_000),
  };
}
