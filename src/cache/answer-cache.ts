import { LRUCache } from "lru-cache";
import type { LabelCacheSettings } from "../config/types.js";
import type { PassedCall } from "../jsonrpc/check.js";
import type { ReadRules } from "../registry/types.js";
import { type CacheRead, cacheRead } from "./cache-read.js";
import type { SharedAnswers } from "./shared-answers.js";

/**
 * One kept answer: its bytes around the id, which each caller's own id fills (relay-cached.ts). Bytes, not
 * strings: outside V8's heap, an entry costs what it holds (the bench's 256 MB budget showed 1.7× in RSS as
 * strings, the heap grown for them and for the garbage of the answers they were cut from).
 */
export interface CacheEntry {
  readonly before: Buffer;
  /** Empty for a REST answer, which has no id: `before` is its body. */
  readonly after: Buffer;
  /** The label's head epoch it was read at, or FINAL for an answer that can no longer change. */
  readonly epoch: number;
  /** For an answer read at the head: when it is too old to serve, however still the head (performance.now()). */
  readonly expiresAt: number;
  /** Which tier of nodes gave it, for a read that may reach the archive nodes (src/answers/archive.ts). */
  readonly tier: "full" | "archive" | undefined;
  /** A REST answer's content type; its body is `before`. */
  readonly contentType?: string | undefined;
  /**
   * A REST answer's other headers a client gets from its node (its `cache-control`, `etag`, …), as a flat
   * list of names and values: the cache's answer carries them as the node's did.
   */
  readonly headers?: readonly string[] | undefined;
}

/** The epoch of an answer that can no longer change: kept until memory runs short. */
export const FINAL = -1;

/** Bytes an entry costs beyond its bytes: the entry and two Buffer objects, its key's slot, the LRU's links. */
const ENTRY_OVERHEAD = 240;

/** Who a read or a write is for (pipeline/admitted.ts): its key's id, or its client address. */
export interface Caller {
  readonly clientId: string;
}

/** How many recent writers a label's cache remembers; past it, it starts over. */
const WRITERS = 10_000;

/** What the cache did, for the metrics (`gateway_cache_*`, docs/cache.md). */
export interface CacheCounts {
  hit: number;
  miss: number;
  coalesced: number;
  evicted: number;
}

/**
 * The answers one label's group keeps (docs/cache.md): least recently used out first, within a byte budget,
 * and none larger than the largest entry. An answer read at the head is served only in the epoch it was
 * read in (src/answers/served-head.ts), and only while young; a final one until it is evicted.
 */
export class AnswerCache {
  readonly settings: LabelCacheSettings;
  readonly counts: CacheCounts = { hit: 0, miss: 0, coalesced: 0, evicted: 0 };
  readonly #entries: LRUCache<string, CacheEntry>;
  /** Final answers shared with other instances through Redis, when `sharedLimits` names one. */
  shared: SharedAnswers | undefined = undefined;
  /** Callers (a key's id, or `ip:` and an address) whose write was answered lately, and when. */
  readonly #writers = new Map<string, number>();
  /** While a reload's answers come over (carryFrom). */
  #carrying = false;
  /** How many times its answers were all forgotten (`forgetAll`). */
  #generation = 0;

  constructor(settings: LabelCacheSettings) {
    this.settings = settings;
    this.#entries = new LRUCache<string, CacheEntry>({
      maxSize: settings.maxBytes,
      sizeCalculation: (entry, key) => sizeOf(entry, key),
      dispose: (_entry, _key, reason) => {
        // answers a reload carries past the new budget were never this cache's to evict
        if (reason === "evict" && !this.#carrying) this.counts.evicted++;
      },
    });
  }

  /**
   * The entry for `key` that may answer now: a final one, or one read in this head epoch that is still young.
   * An archive node's answer goes only to a key with archive access.
   */
  get(key: string, epoch: number, mayArchive: boolean): CacheEntry | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.epoch !== FINAL && (entry.epoch !== epoch || performance.now() > entry.expiresAt)) {
      this.#entries.delete(key);
      return undefined;
    }
    if (entry.tier === "archive" && !mayArchive) return undefined;
    return entry;
  }

  /**
   * The read, unless it reads at the head and the label keeps no answer read there, or its caller wrote
   * lately (`wroteBy`): such a call is relayed as any other, streamed.
   */
  takes(read: CacheRead | undefined, caller: Caller): CacheRead | undefined {
    if (read?.lifetime.kind === "head" && !this.settings.headRelative) return undefined;
    return this.#forCaller(read, caller);
  }

  /**
   * What this cache may answer a JSON-RPC call with (cache-read.ts), as `takes` would leave it; a read at
   * the head on a label that keeps none stops before its key is made, which every such call paid for.
   */
  readOf(reads: ReadRules, call: PassedCall, isHeadCall: boolean, caller: Caller): CacheRead | undefined {
    return this.#forCaller(cacheRead(reads, call, isHeadCall, this.settings.headRelative), caller);
  }

  /**
   * A caller's write on the label was answered. A caller reads its own write, but a node may answer a write
   * before it has applied it (a busy anvil answers a transaction's hash before it mines the block): for
   * `headMaxAgeMs` the writer's reads at the head go to a node and are not kept, while every other
   * caller's are answered as before. The group moves the head's epoch too, for everyone (group.ts `wrote`).
   */
  wroteBy(caller: Caller): void {
    if (this.#writers.size >= WRITERS) this.#writers.clear();
    this.#writers.set(caller.clientId, performance.now());
  }

  /** The read, unless it is at the head and its caller wrote lately. */
  #forCaller(read: CacheRead | undefined, caller: Caller): CacheRead | undefined {
    return read?.lifetime.kind === "head" && this.#wroteLately(caller) ? undefined : read;
  }

  #wroteLately(caller: Caller): boolean {
    if (this.#writers.size === 0) return false;
    const id = caller.clientId;
    const at = this.#writers.get(id);
    if (at === undefined) return false;
    if (performance.now() - at < this.settings.headMaxAgeMs) return true;
    this.#writers.delete(id);
    return false;
  }

  set(key: string, entry: CacheEntry): void {
    // the largest entry is counted by the answer's own bytes, as the setting says, not by what it costs
    // the budget (sizeOf)
    if (entry.before.length + entry.after.length > this.settings.maxEntryBytes) return;
    this.#entries.set(key, entry);
  }

  /** Every answer goes: the blocks they were read from may no longer be on the chain (label-finality.ts `wentBack`). */
  forgetAll(): void {
    this.#entries.clear();
    this.#generation++;
  }

  /**
   * How many times every answer went (`forgetAll`): a shared answer looked up before one of them and found
   * after it may be of the blocks that went, and is neither kept nor served (relay-cached.ts).
   */
  get generation(): number {
    return this.#generation;
  }

  /** Bytes held, as the budget counts them. */
  get bytes(): number {
    return this.#entries.calculatedSize;
  }

  get size(): number {
    return this.#entries.size;
  }

  /**
   * A reload's new cache goes on from the old one's counts, so the counters never go back, and keeps its
   * final answers, least recently used first, within its own budget: a reload (a cordon, a node added) does
   * not send every cached read back to the nodes. An answer kept while the head stays is left behind: its
   * epoch is the old config's; so is one larger than the new largest entry. Without `answers` (the nodes
   * may be another chain's), the counts alone.
   */
  carryFrom(other: AnswerCache, answers = true): void {
    for (const name of ["hit", "miss", "coalesced", "evicted"] as const)
      this.counts[name] += other.counts[name];
    if (!answers) return;
    this.#carrying = true;
    try {
      for (const pair of other.#entries.rentries()) {
        const [key, entry] = pair as [string, CacheEntry];
        if (entry.epoch === FINAL) this.set(key, entry);
      }
    } finally {
      this.#carrying = false;
    }
  }
}

function sizeOf(entry: CacheEntry, key: string): number {
  return (
    Math.ceil((entry.before.length + entry.after.length) * ALLOCATOR_SHARE) + key.length + ENTRY_OVERHEAD
  );
}

/**
 * What an entry's bytes cost the process beyond themselves. An evicted entry's Buffers are freed only when
 * V8 next collects them, and V8 lets memory outside its heap grow by tens of MB before it does; the
 * allocator keeps the room they leave. A 256 MB budget of 64 KB answers filled past it: with 1.25 here
 * RSS grew 313-320 MB, 1.5 MB per MB of answers held, and peaked at 395-409 MB against the 406 the bench
 * allows (2026-11-26, night); with 1.5, 349-357 MB (bench/cache-fill.ts). Counted in, the budget is what
 * the cache costs in RSS.
 */
const ALLOCATOR_SHARE = 1.5;

/**
 * Bytes of their own: a small Buffer from Node's pool would keep the pool's 8 KB slab alive for as long as
 * the entry lives.
 */
export function ownBytes(source: string | Buffer): Buffer {
  const length = typeof source === "string" ? Buffer.byteLength(source) : source.length;
  const bytes = Buffer.allocUnsafeSlow(length);
  if (typeof source === "string") bytes.write(source);
  else source.copy(bytes);
  return bytes;
}

/** A kept answer with a caller's id (its source text) in it. */
export function withId(entry: Pick<CacheEntry, "before" | "after">, id: string): Buffer {
  if (entry.after.length === 0 && id === "") return entry.before;
  return Buffer.concat([entry.before, Buffer.from(id), entry.after]);
}
