import { isHeadCall } from "../answers/read-need.js";
import { FINAL, withId } from "../cache/answer-cache.js";
import { type CacheRead, cacheRead } from "../cache/cache-read.js";
import { keptMembers } from "../cache/kept-answer.js";
import type { PassedCall } from "../jsonrpc/check.js";
import type { HeadCall, ReadRules } from "../registry/types.js";
import type { UpstreamGroup } from "../upstream/group.js";

/** A call that went to the node on a miss: what the cache keeps of its answer, read in this head epoch. */
export interface CacheKeep {
  readonly read: CacheRead;
  readonly epoch: number;
}

/**
 * The answer cache for a WebSocket connection's calls (docs/cache.md, "WebSockets"): a single call the
 * label's cache may answer is answered from it, with the caller's id, and never reaches the node; on a miss
 * it goes to the node, and its answer is kept when it arrives, as an HTTP call's would be. The same cache
 * and rules as HTTP: a call over either transport finds what the other kept. A batch, a subscription and a
 * write always go to the node.
 */
export class CachedCalls {
  readonly #group: UpstreamGroup;
  readonly #reads: ReadRules;
  readonly #head: HeadCall;

  constructor(group: UpstreamGroup, reads: ReadRules, head: HeadCall) {
    this.#group = group;
    this.#reads = reads;
    this.#head = head;
  }

  /** The cached answer to `call` with its id, or what to keep of the node's answer; undefined when neither. */
  lookup(call: PassedCall): { readonly answer: string } | { readonly keep: CacheKeep } | undefined {
    const cache = this.#group.cache;
    if (cache === undefined) return undefined;
    const read = cache.takes(cacheRead(this.#reads, call, isHeadCall(call, this.#head)));
    if (read === undefined) return undefined;
    const epoch = this.#group.served.epoch;
    // a connection is to one label's nodes: an archive tier's answer, kept for HTTP reads, is not for it
    const entry = cache.get(read.key, epoch, false);
    if (entry !== undefined) {
      cache.counts.hit++;
      return { answer: withId(entry, read.id).toString("utf8") };
    }
    cache.counts.miss++;
    return { keep: { read, epoch } };
  }

  /** The node's answer to a call that missed: kept if its lifetime allows, shared when final. */
  keep(keep: CacheKeep, members: ReadonlyMap<string, string>): void {
    const cache = this.#group.cache;
    if (cache === undefined) return;
    const kept = keptMembers(members, 200, keep.read, this.#group, cache.settings, keep.epoch);
    if (kept === undefined || !kept.store) return;
    const entry = { ...kept.entry, tier: undefined };
    cache.set(keep.read.key, entry);
    if (entry.epoch === FINAL) cache.shared?.put(this.#group.label, keep.read.key, entry);
  }
}
