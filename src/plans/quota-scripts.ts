import type { Redis } from "ioredis";

// A scope's day and month counters in Redis, moved together: it grants what fits under both quotas, at most
// ARGV[4] and never less than ARGV[3] (else nothing), and a quarter of what is left once little is, so the
// leases instances hold near the end are small. Beside what was leased, what was spent: the instance's
// spending since its last lease (ARGV[8]) is added to the day's and month's spent counters (KEYS[4], KEYS[5]),
// whose crossings of 80 % and 100 % are announced. Answers the grant, both counters after it, 1 when the
// scope's month was never started from the store (KEYS[3] missing: a new month, or counters Redis lost), and
// both spent counters after it.
const LEASE_SCRIPT = `
local day = tonumber(redis.call('GET', KEYS[1]) or '0')
local month = tonumber(redis.call('GET', KEYS[2]) or '0')
local unstarted = redis.call('EXISTS', KEYS[3]) == 0 and 1 or 0
local daily = tonumber(ARGV[1])
local monthly = tonumber(ARGV[2])
local need = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
-- counters of a month not started from the store may have forgotten what was spent (a Redis restarted
-- empty): nothing is granted from them, nor spending added, unless the instance already tried to start it
-- (ARGV[7] = 1)
if unstarted == 1 and ARGV[7] ~= '1' then return {0, day, month, unstarted, 0, 0} end
local spentDay = redis.call('INCRBY', KEYS[4], tonumber(ARGV[8]))
local spentMonth = redis.call('INCRBY', KEYS[5], tonumber(ARGV[8]))
redis.call('PEXPIRE', KEYS[4], tonumber(ARGV[5]))
redis.call('PEXPIRE', KEYS[5], tonumber(ARGV[6]))
local left = want * 4
if daily > 0 then left = math.min(left, daily - day) end
if monthly > 0 then left = math.min(left, monthly - month) end
if left < need then return {0, day, month, unstarted, spentDay, spentMonth} end
local grant = math.min(want, math.max(need, math.floor(left / 4)))
day = redis.call('INCRBY', KEYS[1], grant)
month = redis.call('INCRBY', KEYS[2], grant)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[5]))
redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[6]))
return {grant, day, month, unstarted, spentDay, spentMonth}
`;

// What an instance leased and did not spend goes back to a scope's counters (ARGV[1]; never below what was
// spent), and its spending since its last lease (ARGV[2]) is added to the spent counters: at a stop, so a
// restart forfeits nothing, and for a lease left idle. Answers the spent counters after it (0: none).
const GIVE_BACK_SCRIPT = `
local spentAfter = {0, 0}
for i = 1, 2 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    local spent = redis.call('INCRBY', KEYS[3 + i], tonumber(ARGV[2]))
    local ttl = redis.call('PTTL', KEYS[i])
    if ttl > 0 then redis.call('PEXPIRE', KEYS[3 + i], ttl) end
    local leased = redis.call('DECRBY', KEYS[i], tonumber(ARGV[1]))
    if leased < spent then redis.call('SET', KEYS[i], spent, 'KEEPTTL') end
    spentAfter[i] = spent
  end
end
return spentAfter
`;

// Adds ARGV[1] units to the day's counters (KEYS[1], leased; KEYS[4], spent) and ARGV[2] to the month's
// (KEYS[2], KEYS[5]), kept ARGV[3] and ARGV[4] ms.
const ADD_UNITS = `
for i = 1, 2 do
  local units = tonumber(ARGV[i])
  if units > 0 then
    for _, key in ipairs({KEYS[i], KEYS[3 + i]}) do
      redis.call('INCRBY', key, units)
      redis.call('PEXPIRE', key, tonumber(ARGV[2 + i]))
    end
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

/**
 * A scope's counters: what instances leased in its day and its month, whether its month was started from
 * the store, and what they spent in its day and its month.
 */
export interface CounterKeys {
  readonly day: string;
  readonly month: string;
  readonly started: string;
  readonly daySpent: string;
  readonly monthSpent: string;
}

/** How long a day's and a month's counters are kept: past their period's end. */
export interface CounterTtls {
  readonly day: number;
  readonly month: number;
}

export function counterKeys(scope: string, day: string): CounterKeys {
  const month = day.slice(0, 7);
  return {
    day: `${scope}:${day}`,
    month: `${scope}:${month}`,
    started: `${scope}:${month}:started`,
    daySpent: `${scope}:${day}:spent`,
    monthSpent: `${scope}:${month}:spent`,
  };
}

/**
 * What a lease answered: its grant, the leased counters after it, whether the month was started (0) or not,
 * and the spent counters after the spending it reported (0 when the month was not started).
 */
export type LeaseAnswer = [
  granted: number,
  day: number,
  month: number,
  unstarted: number,
  daySpent: number,
  monthSpent: number,
];

/** The quota scripts, defined on `redis`. */
export interface QuotaCommands {
  /**
   * `spent`: the instance's spending since its last lease. `blind`: granted from the counters even when the
   * month was not started (a start from the store was tried).
   */
  lease(
    keys: CounterKeys,
    limits: { readonly daily: number; readonly monthly: number },
    need: number,
    want: number,
    ttl: CounterTtls,
    spent: number,
    blind?: boolean,
  ): Promise<LeaseAnswer>;
  /** What the instance leased and did not spend, back; its spending since its last lease, added. */
  giveBack(
    keys: CounterKeys,
    unspent: number,
    spent: number,
  ): Promise<[daySpent: number, monthSpent: number]>;
  start(keys: CounterKeys, day: number, month: number, ttl: CounterTtls): Promise<number>;
  add(keys: CounterKeys, day: number, month: number, ttl: CounterTtls): Promise<number>;
  /** Whether Redis takes a write now (a ping would pass a Redis that refuses writes: maxmemory). */
  writable(): Promise<unknown>;
}

type Command = (...args: (string | number)[]) => Promise<unknown>;

export function quotaCommands(redis: Redis): QuotaCommands {
  redis.defineCommand("gatewayQuotaLease", { numberOfKeys: 5, lua: LEASE_SCRIPT });
  redis.defineCommand("gatewayQuotaGiveBack", { numberOfKeys: 5, lua: GIVE_BACK_SCRIPT });
  redis.defineCommand("gatewayQuotaStart", { numberOfKeys: 5, lua: START_SCRIPT });
  redis.defineCommand("gatewayQuotaAdd", { numberOfKeys: 5, lua: ADD_SCRIPT });
  const command = (name: string) =>
    (redis as unknown as Record<string, Command>)[name]?.bind(redis) as Command;
  const [lease, giveBack, start, add] = ["Lease", "GiveBack", "Start", "Add"].map((n) =>
    command(`gatewayQuota${n}`),
  );
  const keysOf = (k: CounterKeys) => [k.day, k.month, k.started, k.daySpent, k.monthSpent];
  return {
    lease: (k, limits, need, want, ttl, spent, blind = false) =>
      lease?.(
        ...keysOf(k),
        limits.daily,
        limits.monthly,
        need,
        want,
        ttl.day,
        ttl.month,
        blind ? 1 : 0,
        spent,
      ) as Promise<LeaseAnswer>,
    giveBack: (k, unspent, spent) =>
      giveBack?.(...keysOf(k), unspent, spent) as Promise<[daySpent: number, monthSpent: number]>,
    start: (k, day, month, ttl) => start?.(...keysOf(k), day, month, ttl.day, ttl.month) as Promise<number>,
    add: (k, day, month, ttl) => add?.(...keysOf(k), day, month, ttl.day, ttl.month) as Promise<number>,
    writable: () => redis.set("writable", "1", "PX", 5_000),
  };
}
