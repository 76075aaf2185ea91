import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { deflateRaw, inflateRaw } from "node:zlib";
import { Redis } from "ioredis";
import type { SharedLimitsConfig } from "../config/types.js";
import { sharedRedisOptions } from "../limits/redis-options.js";
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

  constructor(config: SharedLimitsConfig, keyPrefix = "gateway:answer:") {
    this.#keyPrefix = keyPrefix;
    this.#redis = new Redis(config.redis, { ...sharedRedisOptions(keyPrefix), commandTimeout: LOOKUP_MS });
    // Failed reconnections are retried with backoff; meanwhile each instance answers from its own cache.
    this.#redis.on("error", () => {});
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
    if (!this.up) return undefined;
    try {
      const stored = await this.#redis.getBuffer(redisKey(scope, key));
      if (stored === null) {
        this.counts.miss++;
        return undefined;
      }
      const entry = unpacked(await inflate(stored));
      this.counts.hit++;
      return entry;
    } catch {
      this.counts.error++;
      return undefined;
    }
  }

  /** Shares a final answer in a label's `scope` (`sharedScope`); a failure only leaves it unshared. */
  put(scope: string, key: string, entry: SharedEntry): void {
    if (!this.up) return;
    this.#watchMemory();
    // none before Redis has said how much memory it has: a second of answers may be more than its room
    // (its INFO waits on a loaded host, at LOOKUP_MS a command)
    if (this.#memory === undefined) return;
    if (this.#full()) {
      this.counts.full++;
      return;
    }
    const head = Buffer.from(
      `${JSON.stringify([entry.before.length, entry.tier ?? null, entry.contentType ?? null, entry.headers ?? null])}\n`,
    );
    deflate(Buffer.concat([head, entry.before, entry.after]))
      .then((packed) => {
        // counted before Redis has it: the answers put within a second of INFO's reading count against it
        this.#putSince += packed.length + KEY_OVERHEAD;
        return this.#redis.set(redisKey(scope, key), packed, "PX", KEEP_MS);
      })
      .then(() => {
        this.counts.stored++;
      })
      .catch((error: Error) => {
        this.counts.error++;
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
   * Every shared answer of a label goes: its chain went back under its finalized blocks (group.ts
   * `wentBack`), and what was final may not be on it any more. A failure leaves them; each instance's own
   * prober sees the same chain and forgets its own.
   */
  forget(scope: string): void {
    if (!this.up) return;
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
    this.#redis.disconnect();
  }
}

/**
 * A stored answer: a JSON line `[bytes before the id, tier, content type, a REST answer's other headers]`
 * (one an instance from before 2026-11-28 stored has three members), then the bytes before the id and after
 * it.
 */
function unpacked(stored: Buffer): SharedEntry {
  const line = stored.indexOf(10);
  const [beforeLength, tier, contentType, headers] = JSON.parse(
    stored.subarray(0, line).toString("utf8"),
  ) as [number, SharedEntry["tier"] | null, string | null, string[] | null | undefined];
  const start = line + 1;
  return {
    before: ownBytes(stored.subarray(start, start + beforeLength)),
    after: ownBytes(stored.subarray(start + beforeLength)),
    tier: tier ?? undefined,
    contentType: contentType ?? undefined,
    ...(headers === null || headers === undefined ? {} : { headers }),
  };
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
