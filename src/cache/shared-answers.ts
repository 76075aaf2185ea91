import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { deflateRaw, inflateRaw } from "node:zlib";
import type { Redis } from "ioredis";
import type { SharedLimitsConfig } from "../config/types.js";
import { logDropped, reconnectWhenSilent, sharedRedis, sharedRedisOptions } from "../limits/redis-options.js";
import type { Logger } from "../log.js";
import type { UpstreamGroup } from "../upstream/group.js";
import { ownBytes } from "./answer-cache.js";

const deflate = promisify(deflateRaw);
const inflate = promisify(inflateRaw);

/** A final answer as instances share it: its bytes around the id, the tier that gave it, a REST content type. */
export interface SharedEntry {
  readonly before: Buffer;
  readonly after: Buffer;
  readonly tier: "full" | "archive" | undefined;
  readonly contentType?: string | undefined;
  readonly headers?: readonly string[] | undefined;
}

/**
 * A lookup waits this long for Redis before the call goes to a node: a node's answer is tens of ms, and a
 * shared layer slower than that saves a node's work at a caller's cost.
 */
const LOOKUP_MS = 50;

/** How long a shared answer is kept when Redis does not evict it first (its maxmemory policy). */
const KEEP_MS = 24 * 3600 * 1000;

/** How often a put looks at Redis's memory (INFO memory): once a second at most, never while idle. */
const MEMORY_CHECK_MS = 1_000;

/** What Redis holds for a key besides its value (its entry, its expiry): an estimate, for the bytes put since. */
const KEY_OVERHEAD = 128;

/**
 * The share of a `maxmemory` past which answers stop being stored in a Redis that does not evict them at
 * will: the quotas' Redis (docs/plans.md, "Many instances": `noeviction`) full of answers refuses every
 * lease, and each instance then counts its quotas alone. The rest is its room for a second's answers.
 */
const FULL_SHARE = 0.75;

/**
 * Final answers shared by every gateway instance through the Redis of `sharedLimits` (docs/cache.md,
 * "Many instances"), compressed, behind each instance's own cache: an answer one instance fetched, another
 * serves without asking a node. Only answers that can no longer change are shared. While Redis is away the
 * shared layer is off and each instance keeps its own; nothing waits for it to come back.
 */
export class SharedAnswers {
  readonly #redis: Redis;
  readonly #keyPrefix: string;
  /**
   * Lookups that found an answer or none, answers stored, answers not stored for Redis's memory, and
   * failures (Redis slow or away): the metrics.
   */
  readonly counts = { hit: 0, miss: 0, stored: 0, full: 0, error: 0 };
  /** Redis's memory as INFO last said, and the bytes this instance put since: whether it is near FULL_SHARE. */
  #memory: RedisMemory | undefined = undefined;
  #putSince = 0;
  /** Redis refused a write for its memory: no more until INFO says it has room. */
  #refused = false;
  #memoryCheckedAt = Number.NEGATIVE_INFINITY;
  /** Each scope's generation as this instance last read or made it: what its answers are stored under. */
  readonly #generations = new Map<string, number>();
  /** Scopes cleared here whose new generation Redis has not taken yet, by clears under way: none read or stored. */
  readonly #clearing = new Map<string, number>();
  #closed = false;
  /** Told of each failed command: a connection whose path went silent is made anew (a busy Redis's is kept). */
  readonly #silent: (error: unknown) => void;

  /** `logger` hears of a connection dropped as silent (docs/deployment.md, "Redis silent"). */
  constructor(config: SharedLimitsConfig, keyPrefix = "gateway:answer:", logger?: Logger) {
    this.#keyPrefix = keyPrefix;
    this.#redis = sharedRedis(config.redis, { ...sharedRedisOptions(keyPrefix), commandTimeout: LOOKUP_MS });
    // Failed reconnections are retried with backoff; meanwhile each instance answers from its own cache.
    this.#redis.on("error", () => {});
    this.#silent = reconnectWhenSilent(this.#redis, logDropped(logger, "shared answers"));
    // its memory is known before the first answer is put (and read again after a reconnection)
    this.#redis.on("ready", () => {
      this.#memoryCheckedAt = Number.NEGATIVE_INFINITY;
      this.#watchMemory();
    });
  }

  /** Whether lookups go to Redis now: not while it is away. */
  get up(): boolean {
    return this.#redis.status === "ready";
  }

  /**
   * The shared answer for a call in a label's `scope` (`sharedScope`), or undefined when there is none or
   * Redis did not say in time.
   */
  async get(scope: string, key: string): Promise<SharedEntry | undefined> {
    if (!this.up || this.#clearing.has(scope)) return undefined;
    try {
      // the scope's generation with the answer, in one round trip: an answer stored under an older one was
      // cleared (`forget`), by this instance or another
      const [generation, stored] = await this.#redis.mgetBuffer(generationKey(scope), redisKey(scope, key));
      const current = generationOf(generation);
      if (!this.#clearing.has(scope)) this.#generations.set(scope, current);
      const found = stored === null || stored === undefined ? undefined : unpacked(await inflate(stored));
      if (found === undefined || found.generation !== current) {
        this.counts.miss++;
        return undefined;
      }
      this.counts.hit++;
      return found.entry;
    } catch (error) {
      this.counts.error++;
      this.#silent(error);
      return undefined;
    }
  }

  /** Shares a final answer in a label's `scope` (`sharedScope`); a failure only leaves it unshared. */
  put(scope: string, key: string, entry: SharedEntry): void {
    if (!this.up || this.#clearing.has(scope)) return;
    this.#watchMemory();
    // none before Redis has said how much memory it has: a second of answers may be more than its room
    // (its INFO waits on a loaded host, at LOOKUP_MS a command)
    if (this.#memory === undefined) return;
    if (this.#full()) {
      this.counts.full++;
      return;
    }
    // counted now, at its size before compression (more than it will take): a batch's answers are all
    // put before the first is compressed, and each passed the check above with none of the others counted
    // (on a loaded host their writes landed past maxmemory, and Redis then refused the quotas' leases)
    const estimate = entry.before.length + entry.after.length + KEY_OVERHEAD;
    this.#putSince += estimate;
    const known = this.#generations.get(scope);
    const generation =
      known === undefined
        ? this.#redis.getBuffer(generationKey(scope)).then(generationOf)
        : Promise.resolve(known);
    generation
      .then((at) => {
        if (known === undefined && !this.#clearing.has(scope)) this.#generations.set(scope, at);
        const head = Buffer.from(
          `${JSON.stringify([entry.before.length, entry.tier ?? null, entry.contentType ?? null, entry.headers ?? null, at])}\n`,
        );
        return deflate(Buffer.concat([head, entry.before, entry.after]));
      })
      .then((packed) => {
        // a clear begun meanwhile: the answer may be of what it cleared
        if (this.#clearing.has(scope)) return undefined;
        // counted before Redis has it, at its packed size now: the answers put within a second of INFO's
        // reading count against it
        this.#putSince = Math.max(0, this.#putSince + packed.length + KEY_OVERHEAD - estimate);
        return this.#redis.set(redisKey(scope, key), packed, "PX", KEEP_MS);
      })
      .then((stored) => {
        if (stored !== undefined) this.counts.stored++;
      })
      .catch((error: Error) => {
        this.counts.error++;
        this.#silent(error);
        // a Redis that refused it for its memory refuses the quotas' leases too: no more until it has room
        if (error.message.startsWith("OOM")) this.#refused = true;
      });
  }

  /**
   * Whether Redis is near a memory limit it will not make room under: FULL_SHARE of it held, as INFO last
   * said plus what this instance put since (a second's answers may be more than the room left), or a write
   * refused for memory since.
   */
  #full(): boolean {
    if (this.#refused) return true;
    const memory = this.#memory;
    if (memory?.keeps !== true) return false;
    return memory.used + this.#putSince >= memory.max * FULL_SHARE;
  }

  /** Reads Redis's memory at most once a MEMORY_CHECK_MS, as answers are put. */
  #watchMemory(): void {
    const now = performance.now();
    if (now - this.#memoryCheckedAt < MEMORY_CHECK_MS) return;
    this.#memoryCheckedAt = now;
    // what was put before INFO is in its reading; what is put while it is on its way, not yet
    const counted = this.#putSince;
    this.#redis
      .info("memory")
      .then((info) => {
        this.#memory = memoryOf(info);
        this.#putSince = Math.max(0, this.#putSince - counted);
        this.#refused = false;
      })
      .catch(() => {
        // unknown: left as it was, and read again a second later
      });
  }

  /**
   * Every shared answer of a label's scope goes: its chain went back under its finalized blocks (label-finality.ts
   * `wentBack`), and what was final may not be on it any more. The scope's generation rises in Redis (INCR),
   * and no instance reads an answer stored under an older one; until Redis has taken it (it is retried
   * while Redis is slow or away), this instance reads and stores none of the scope's. Each instance's own
   * prober sees the same chain and clears it too.
   */
  forget(scope: string): void {
    this.#clearing.set(scope, (this.#clearing.get(scope) ?? 0) + 1);
    this.#generations.delete(scope);
    this.#newGeneration(scope, 0);
  }

  #newGeneration(scope: string, attempt: number): void {
    if (this.#closed) return;
    const retry = () => {
      setTimeout(() => this.#newGeneration(scope, attempt + 1), Math.min(100 * 2 ** attempt, 5_000)).unref();
    };
    if (!this.up) {
      retry();
      return;
    }
    this.#redis.incr(generationKey(scope)).then(
      (generation) => {
        const clears = (this.#clearing.get(scope) ?? 1) - 1;
        if (clears > 0) {
          this.#clearing.set(scope, clears);
          return;
        }
        this.#clearing.delete(scope);
        this.#generations.set(scope, generation);
        this.#unlinkOld(scope);
      },
      (error: unknown) => {
        this.counts.error++;
        // the scope's lookups and puts wait for this clear: its failure alone can say the path went silent
        this.#silent(error);
        retry();
      },
    );
  }

  /**
   * The answers of the scope's older generations, unread from now on, out of Redis's memory at once rather
   * than in their 24 hours: a failure leaves them to expire.
   */
  #unlinkOld(scope: string): void {
    // SCAN's pattern and the keys it finds carry the prefix, which ioredis adds to UNLINK's keys itself
    const prefix = this.#keyPrefix;
    const scan = this.#redis.scanStream({ match: `${prefix}${scope}:*`, count: 500 });
    scan.on("data", (keys: string[]) => {
      if (keys.length > 0)
        this.#redis.unlink(...keys.map((key) => key.slice(prefix.length))).catch(() => {
          this.counts.error++;
        });
    });
    scan.on("error", () => {
      this.counts.error++;
    });
  }

  close(): void {
    this.#closed = true;
    this.#redis.disconnect();
  }
}

/**
 * A stored answer: a JSON line `[bytes before the id, tier, content type, a REST answer's other headers,
 * the scope's generation it was stored in]` (one an instance from before 2026-11-28 stored has three
 * members, from before 2026-11-29 four: stored in generation 0, before any clear), then the bytes before
 * the id and after it.
 */
function unpacked(stored: Buffer): { readonly entry: SharedEntry; readonly generation: number } {
  const line = stored.indexOf(10);
  const [beforeLength, tier, contentType, headers, generation] = JSON.parse(
    stored.subarray(0, line).toString("utf8"),
  ) as [number, SharedEntry["tier"] | null, string | null, string[] | null | undefined, number | undefined];
  const start = line + 1;
  const entry: SharedEntry = {
    before: ownBytes(stored.subarray(start, start + beforeLength)),
    after: ownBytes(stored.subarray(start + beforeLength)),
    tier: tier ?? undefined,
    contentType: contentType ?? undefined,
    ...(headers === null || headers === undefined ? {} : { headers }),
  };
  return { entry, generation: generation ?? 0 };
}

/**
 * Where a scope's generation is counted: out of `forget`'s pattern (`<scope>:*`), and with no expiry, so
 * that it outlives every answer stored under it (a Redis that evicts only keys with a time to live keeps it).
 */
function generationKey(scope: string): string {
  return `${scope}#generation`;
}

/** A generation as Redis holds it: none before the scope's first clear. */
function generationOf(value: Buffer | string | null | undefined): number {
  return value === null || value === undefined ? 0 : Number(value.toString());
}

/** The label's scope and a digest of the call's key: a bounded Redis key, whatever the params' length. */
function redisKey(scope: string, key: string): string {
  return `${scope}:${createHash("sha256").update(key).digest("base64url")}`;
}

/** Each group's scope when its chain is not checked: its nodes are its for its life (a reload makes new groups). */
const UNCHECKED_SCOPES = new WeakMap<UpstreamGroup, string>();

/**
 * Where a label's final answers are shared in Redis (docs/cache.md, "Many instances"). A label whose nodes
 * the prober asks which chain they are on shares them under its name, as before: every instance's nodes
 * for it are on the one chain the registry names for it. One whose nodes are not asked (registry
 * `noChainId`, or probes off) may be served by another chain's nodes on another instance, or after a
 * reload or a restart: it shares only with instances on the same nodes, under its name and a digest of
 * their URLs (credentials left out, and the rest of a URL, which may hold a token, never in Redis).
 */
export function sharedScope(group: UpstreamGroup): string {
  if (group.chainChecked) return group.label;
  let scope = UNCHECKED_SCOPES.get(group);
  if (scope === undefined) {
    const nodes = group.members.map((m) => `${m.origin}${m.basePath}?${m.baseQuery}`).sort();
    const digest = createHash("sha256").update(nodes.join("\n")).digest("base64url").slice(0, 22);
    scope = `${group.label}~${digest}`;
    UNCHECKED_SCOPES.set(group, scope);
  }
  return scope;
}

/** Redis's memory (`INFO memory`): bytes used, its `maxmemory`, and whether it keeps every key under it. */
interface RedisMemory {
  readonly used: number;
  readonly max: number;
  /**
   * A `maxmemory` it will not make room under by evicting any key (an `allkeys-*` policy would drop old
   * answers instead): `noeviction` refuses writes once full, a `volatile-*` policy evicts keys with a time
   * to live, the quotas' counters among them.
   */
  readonly keeps: boolean;
}

/** Redis's memory, from the text of its `INFO memory`. */
function memoryOf(info: string): RedisMemory {
  const field = (name: string) => new RegExp(`^${name}:(.*)$`, "m").exec(info)?.[1]?.trim();
  const max = Number(field("maxmemory"));
  const policy = field("maxmemory_policy") ?? "";
  return { used: Number(field("used_memory")), max, keeps: max > 0 && !policy.startsWith("allkeys-") };
}
