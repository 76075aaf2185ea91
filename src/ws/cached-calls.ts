import { isHeadCall } from "../answers/read-need.js";
import { type AnswerCache, type Caller, FINAL, withId } from "../cache/answer-cache.js";
import type { CacheRead } from "../cache/cache-read.js";
import { behindServed, failedAnswer, keepEntry, keptMembers, sharable } from "../cache/kept-answer.js";
import { type FlightEntry, type FlightFollower, followFlight } from "../cache/relay-cached.js";
import { CallHold } from "../cache/shared-caller.js";
import {
  followSocketFlight,
  landSocketFlight,
  openSocketFlight,
  type SocketFlight,
} from "../cache/socket-flights.js";
import type { PassedCall } from "../jsonrpc/check.js";
import { isPlainId } from "../jsonrpc/id-key.js";
import type { HeadCall, ReadRules } from "../registry/types.js";
import type { UpstreamGroup } from "../upstream/group.js";
import type { Upstream } from "../upstream/upstreams.js";

/** A call that went to the node on a miss: what the cache keeps of its answer, read in this head epoch. */
export interface CacheKeep {
  readonly read: CacheRead;
  readonly epoch: number;
  /**
   * Its flight, which identical calls on the label's connections wait on; none for a call on the node
   * that took its caller's write, which shares none (cache-read.ts `ownNode`).
   */
  readonly flight: SocketFlight | undefined;
}

/**
 * What a call waiting on another's answer is told: the answer with its own id, or undefined when there is
 * none to share (the call failed, its connection closed, or it took too long: cache/socket-flights.ts) and
 * it must be asked of the node.
 */
export type Follow = (answer: string | undefined) => void;

/**
 * The answer cache for a WebSocket connection's calls (docs/cache.md, "WebSockets"): a single call the
 * label's cache may answer is answered from it, with the caller's id, and never reaches the node; a call
 * identical to one in flight, over HTTP or on any of the label's connections, waits for that call's answer
 * (coalesced); on a miss it goes to the node, and its answer is kept when it arrives, as an HTTP call's
 * would be. The same cache and rules as HTTP: a call over either transport finds what the other kept. A
 * batch, a subscription and a write always go to the node.
 */
export class CachedCalls {
  readonly #group: UpstreamGroup;
  readonly #reads: ReadRules;
  readonly #head: HeadCall;
  /** Who the connection's calls are for: its writes keep its own reads at the head from the cache a while. */
  readonly #caller: Caller;
  /** This connection's misses in flight: they land with nothing to share if it closes first. */
  readonly #opened = new Set<SocketFlight>();
  /**
   * Its calls waiting on another's: each holds the node call it waits on (an HTTP caller's hanging up does
   * not cancel it for them) until its answer lands, or the connection closes.
   */
  readonly #holds = new Set<CallHold>();

  constructor(group: UpstreamGroup, reads: ReadRules, head: HeadCall, caller: Caller) {
    this.#group = group;
    this.#reads = reads;
    this.#head = head;
    this.#caller = caller;
  }

  /**
   * The cached answer to `call` with its id; "following" when it waits on an identical call in flight and
   * `follow` will be told; else what to keep of the node's answer; undefined when none of these applies. A
   * call that may not wait (the connection's in-flight cap) passes no `follow`.
   */
  lookup(
    call: PassedCall,
    follow: Follow | undefined,
    node: Upstream,
  ): { readonly answer: string } | { readonly keep: CacheKeep } | "following" | undefined {
    const cache = this.#group.cache;
    if (cache === undefined) return undefined;
    const read = cache.readOf(this.#reads, call, isHeadCall(call, this.#head), this.#caller);
    if (read === undefined) return undefined;
    const epoch = this.#group.served.epoch;
    // the caller's id as it sent it, as the relay answers its misses: not the text form a node that
    // answers every id as text would give (`read.id`, registry `idAsText`), which a client matching its
    // number id never finds
    const id = call.id ?? read.id;
    // A connection's node behind the head the label served answers its misses from its own head: an answer
    // kept from a node at the served head, then its own, would show the caller the head going back. Only
    // final answers are the same on every node.
    const behind = behindServed(node, this.#group);
    // a connection is to one label's nodes: an archive tier's answer, kept for HTTP reads, is not for it
    const entry = cache.get(read.key, epoch, false);
    if (entry !== undefined && (!behind || entry.epoch === FINAL)) {
      cache.counts.hit++;
      return { answer: withId(entry, id).toString("utf8") };
    }
    if (behind && read.lifetime.kind !== "always") return undefined;
    // the connection's node took its caller's last write (its mempool has it): its calls share no flight
    // with calls another of the label's nodes may answer
    const ownNode =
      this.#group.members.length > 1 && this.#group.writers.nodeOf(this.#caller.clientId) === node;
    if (follow !== undefined && !ownNode) {
      // counted by what it becomes: one that lands with nothing to share goes to a node, unkept
      const hold = new CallHold();
      const follower: FlightFollower = (landed) => {
        this.#holds.delete(hold);
        hold.release();
        if (landed === undefined) {
          cache.counts.miss++;
          return follow(undefined);
        }
        cache.counts.coalesced++;
        follow(withId(landed, id).toString("utf8"));
      };
      if (
        followSocketFlight(cache, read.key, epoch, follower, hold) ||
        followFlight(cache, read.key, epoch, follower, hold)
      ) {
        this.#holds.add(hold);
        return "following";
      }
    }
    // a call whose id a node may refuse (jsonrpc/id-key.ts isPlainId) leads no identical calls: its
    // answer may be an error about its id, with none the flight could land with
    if (!isPlainId(read.id)) return undefined;
    cache.counts.miss++;
    if (ownNode) return { keep: { read, epoch, flight: undefined } };
    const flight = openSocketFlight(cache, read.key, epoch);
    this.#opened.add(flight);
    return { keep: { read, epoch, flight } };
  }

  /** The node's answer to a call that missed: kept if its lifetime allows, shared when final, and given to the calls waiting on it. */
  keep(keep: CacheKeep, members: ReadonlyMap<string, string>, node: Upstream): void {
    const cache = this.#group.cache;
    if (cache === undefined) return;
    let kept = keptMembers(members, 200, keep.read, this.#group, cache.settings, keep.epoch, node);
    // A connection's node is whichever it opened on, not one chosen for the label's served head as an HTTP
    // read's is: an answer read at the head by a node behind that head is the connection's own, never
    // kept for callers who were served a higher head, nor given to the calls waiting on it.
    if (kept !== undefined && !sharable(kept, node, this.#group)) kept = undefined;
    const entry =
      kept === undefined
        ? undefined
        : {
            ...kept.entry,
            tier: undefined,
            ...(failedAnswer(members, kept) ? { failed: true as const } : {}),
          };
    this.#land(cache, keep.flight, entry);
    if (entry !== undefined && kept?.store === true) keepEntry(cache, this.#group, keep.read.key, entry);
  }

  /** A miss whose call was refused after all: the calls waiting on it ask a node themselves. */
  drop(keep: CacheKeep): void {
    const cache = this.#group.cache;
    if (cache !== undefined) this.#land(cache, keep.flight, undefined);
  }

  /** The connection closed: calls waiting on its misses ask a node themselves, and its own waits let go. */
  close(): void {
    for (const hold of this.#holds) hold.release();
    this.#holds.clear();
    const cache = this.#group.cache;
    if (cache === undefined) return;
    for (const flight of this.#opened) this.#land(cache, flight, undefined);
  }

  #land(cache: AnswerCache, flight: SocketFlight | undefined, entry: FlightEntry | undefined): void {
    if (flight === undefined) return;
    this.#opened.delete(flight);
    landSocketFlight(cache, flight, entry);
  }
}
