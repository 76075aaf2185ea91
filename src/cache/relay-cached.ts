import type { ServerResponse } from "node:http";
import type { Span } from "@opentelemetry/api";
import { fetchByTier, TIER_HEADER, type TierFields } from "../answers/archive.js";
import { fetchByHash } from "../answers/by-hash.js";
import { learnHeights, showsHeight, whenShared } from "../answers/examined.js";
import { GatewayError } from "../errors/table.js";
import { type CallerSide, clientGone } from "../http/client-gone.js";
import { withAnswerTag } from "../http/request-id.js";
import { isPlainId } from "../jsonrpc/id-key.js";
import { CACHE } from "../tracing/attributes.js";
import type { WholeAnswer } from "../upstream/buffered-answer.js";
import { endsBy } from "../upstream/caller-end.js";
import { fetchWhole, type RelayDone, type UpstreamCall } from "../upstream/policy.js";
import { type AnswerCache, type CacheEntry, FINAL } from "./answer-cache.js";
import type { CacheRead } from "./cache-read.js";
import { headersFor, sendKept } from "./cached-response.js";
import { keepEntry, keptAnswer, sharable } from "./kept-answer.js";
import { sharedScope } from "./shared-answers.js";
import { type CallHold, SharedCaller } from "./shared-caller.js";
import { followSocketFlight, socketFollowers } from "./socket-flights.js";

/** Where a cached call notes how the cache answered it, beside the upstream fields. */
export interface CacheFields extends TierFields {
  cache: string | undefined;
  /** A batch's calls answered from the cache or by identical calls' answers, by method (batch-cached.ts). */
  cachedMethods?: string[] | undefined;
  /** Of those, the calls given an archive node's kept answer (in `archivedMethods` too), by method. */
  cachedArchivedMethods?: string[] | undefined;
}

/** One client waiting for a coalesced call's answer. */
interface Waiter {
  /** Its own call: asked of a node alone when the flight's answer could not be given its id. */
  readonly call: UpstreamCall;
  readonly res: ServerResponse;
  readonly id: string;
  readonly note: CacheFields;
  readonly done: RelayDone;
  /** A coalesced client's wait for the call it joined, when its request is traced. */
  readonly wait: Span | undefined;
  /**
   * How a client that joined the call asks again when the call fails (`failed`); undefined for the client
   * that started it, and for one that asks again already, whom a second failure answers.
   */
  readonly askAgain: Missed | undefined;
}

/** An upstream call in flight, and the clients waiting for its answer; the first of them started it. */
interface Flight {
  readonly caller: SharedCaller;
  readonly waiters: Waiter[];
  /** WebSocket calls waiting on it too (ws/cached-calls.ts). */
  readonly followers: FlightFollower[];
}

/**
 * A kept answer, as a flight lands with it. `failed`: an error a batch's or a connection's call was answered
 * with (not a deterministic one, kept as final), whose HTTP status a lone call's node chooses (a JSON-RPC 1.0
 * node's 500 for an error), and a batch's array or a WebSocket message does not tell.
 */
export type FlightEntry = Pick<CacheEntry, "before" | "after" | "tier" | "contentType" | "headers"> & {
  readonly failed?: true;
};

/**
 * A call waiting on another's flight without a response of its own to write: given the answer as the cache
 * holds it, or undefined when the flight has none to share (it failed, or its answer names no id), and the
 * call must then be asked of a node itself.
 */
export type FlightFollower = (entry: FlightEntry | undefined) => void;

/**
 * Joins an HTTP call in flight for the same read in the same head epoch, for a caller that may not read
 * archive data: true when there was one, and `follower` is told of its answer. The follower's `holder` (an
 * HTTP batch's response, a WebSocket call's hold) joins the call's clients: the first hanging up does not
 * cancel it for the follower.
 */
export function followFlight(
  cache: AnswerCache,
  key: string,
  epoch: number,
  follower: FlightFollower,
  holder: ServerResponse | CallHold,
): boolean {
  const flight = flights.get(cache)?.get(flightKeyOf(key, epoch, false));
  if (flight === undefined) return false;
  flight.followers.push(follower);
  flight.caller.join(holder);
  return true;
}

/** A flight's key: its read, the head epoch it was asked in, and whether its caller may read archive data. */
function flightKeyOf(key: string, epoch: number, mayArchive: boolean): string {
  return `${key}\n${epoch}\n${mayArchive ? "archive" : "full"}`;
}

function land(flight: Flight, entry: FlightEntry | undefined): void {
  // once: a bug thrown after it landed lands it again (`broke`)
  for (const follow of flight.followers.splice(0)) follow(entry);
}

/** Each cache's calls in flight, by their key, the head epoch they were asked in, and the caller's access. */
const flights = new WeakMap<AnswerCache, Map<string, Flight>>();

/** The calls waiting on an identical call's answer in flight, over HTTP and WebSockets: coalescing under way. */
export function callsWaiting(cache: AnswerCache): number {
  let waiting = socketFollowers(cache);
  for (const flight of flights.get(cache)?.values() ?? [])
    waiting += flight.waiters.length - 1 + flight.followers.length;
  return waiting;
}

/**
 * 7, for a call the cache may answer (docs/cache.md): from the label's cache when it holds a live answer
 * (`hit`); else, when the same call is already in flight, with that call's answer (`coalesced`); else from
 * a node (`miss`), whose answer is kept for as long as its block allows. Every client gets the answer with
 * its own id, as one node would have sent it. The upstream call belongs to every client waiting on it: the
 * first hanging up does not cancel it for the others.
 */
export function relayCached(
  call: UpstreamCall,
  read: CacheRead,
  cache: AnswerCache,
  res: ServerResponse,
  note: CacheFields,
  done: RelayDone,
): void {
  const epoch = call.group.served.epoch;
  const mayArchive = call.tier?.mayArchive ?? false;
  const lookup = call.trace?.step("cache lookup");
  const entry = cache.get(read.key, epoch, mayArchive);
  if (entry !== undefined) {
    looked(lookup, "hit");
    cache.counts.hit++;
    if (entry.tier === "archive" && call.tier !== undefined) note.label = call.tier.archiveLabel;
    note.tier = entry.tier;
    note.cache = "hit";
    sendKept(res, 200, entry, read.id, headersFor("hit", entry.tier));
    done();
    return;
  }
  const missed: Missed = { call, read, cache, res, note, done, epoch };
  if (!mayArchive && read.ownNode !== true && followSocket(missed)) {
    looked(lookup, "coalesced");
    return;
  }
  joinOrFly(missed, lookup);
}

/** A client's call the cache holds no live answer to, on its way to one. */
interface Missed {
  readonly call: UpstreamCall;
  readonly read: CacheRead;
  readonly cache: AnswerCache;
  readonly res: ServerResponse;
  readonly note: CacheFields;
  readonly done: RelayDone;
  /** The head epoch it was asked in. */
  readonly epoch: number;
  /** It waited on an identical call that failed, and asks again: a failure now is its answer. */
  readonly again?: true;
}

/**
 * Waits on an identical call in flight on one of the label's WebSocket connections, for a caller that may
 * not read archive data: true when there is one. If it lands with nothing to share, the call goes on as
 * if it had found none.
 */
function followSocket(missed: Missed): boolean {
  const { call, read, cache, res, note, done, epoch } = missed;
  // set once the call waits: a flight lands in a later turn of the event loop, never within this one
  let wait: Span | undefined;
  const following = followSocketFlight(
    cache,
    read.key,
    epoch,
    (landed) => {
      wait?.end(performance.now());
      // counted by what it becomes: one that lands with nothing to share is counted where it goes next;
      // an archive node's answer is never this caller's (it may not read archive data); an error, whose
      // status a lone call would have from its node, is asked as one
      if (landed === undefined || landed.tier === "archive" || landed.failed === true)
        return joinOrFly(missed, undefined);
      cache.counts.coalesced++;
      // a connection's node is one of the label's own: the full tier, for a read the tiers divide
      const tier = landed.tier ?? (call.tier === undefined ? undefined : "full");
      note.tier = tier;
      note.cache = "coalesced";
      sendKept(res, 200, landed, read.id, headersFor("coalesced", tier));
      done();
    },
    res,
  );
  if (!following) return false;
  wait = call.trace?.step("coalesced wait");
  return true;
}

/** The call joins an identical HTTP call in flight, or goes to the node (or the shared layer) itself. */
function joinOrFly(missed: Missed, lookup: Span | undefined): void {
  const { call, read, cache, res, note, done, epoch } = missed;
  const mayArchive = call.tier?.mayArchive ?? false;
  // a read that may reach the archive nodes is answered by access: an archive key's call is not another's
  const flightKey = flightKeyOf(read.key, epoch, mayArchive);
  let inFlight = flights.get(cache);
  if (inFlight === undefined) {
    inFlight = new Map();
    flights.set(cache, inFlight);
  }
  // a call sent first to its caller's write's node shares no flight (cache-read.ts `ownNode`)
  const alone = read.ownNode === true;
  const joined = alone ? undefined : inFlight.get(flightKey);
  if (joined !== undefined) {
    looked(lookup, "coalesced");
    const waiter: Waiter = {
      call,
      res,
      id: read.id,
      note,
      done,
      wait: call.trace?.step("coalesced wait"),
      askAgain: missed.again === true ? undefined : missed,
    };
    // a call asking again was counted as it first joined: the cache's counts are counters, never taken back
    if (missed.again !== true) cache.counts.coalesced++;
    joined.caller.join(res);
    joined.waiters.push(waiter);
    return;
  }
  const waiter: Waiter = { call, res, id: read.id, note, done, wait: undefined, askAgain: undefined };
  const flight: Flight = { caller: new SharedCaller(), waiters: [waiter], followers: [] };
  flight.caller.join(res);
  // a call whose id a node may refuse (1.5, a 30-digit number) would hand that refusal to every caller
  // waiting on it: it goes alone, and no call joins it. A REST read has no id to refuse.
  const leads = !alone && (read.rest === true || isPlainId(read.id));
  if (leads) inFlight.set(flightKey, flight);
  const landed = () => {
    if (leads) (inFlight as Map<string, Flight>).delete(flightKey);
  };
  // A bug of the code below ends each waiting client's request at its error boundary, which logs it with
  // its stack (a request that had its answer already is ended once: the boundary only logs the second);
  // the calls that followed the flight go to a node themselves.
  const broke = (bug: unknown): void => {
    landed();
    for (const w of flight.waiters) {
      w.wait?.end(performance.now());
      w.done(bug);
    }
    land(flight, undefined);
  };
  // thrown where the node's answer is read, in the upstream call's handler (upstream/caller-end.ts)
  endsBy(flight.caller, broke);
  const fromNode = (): void => {
    looked(lookup, "miss");
    if (missed.again !== true) cache.counts.miss++;
    fetchAnswer(call, flight.caller, note, (error, answer, tier) => {
      landed();
      if (error !== undefined || answer === undefined) {
        failed(flight, (given) => {
          for (const w of given) {
            w.wait?.end(performance.now());
            w.done(error);
          }
        });
        return;
      }
      // a REST answer may be bytes that are no text (msgpack): its heights are read only as the relay does
      const text = read.rest === true ? "" : answer.body.toString("utf8");
      if (answer.statusCode === 200 && showsHeight(call))
        learnHeights(call, answer.upstream, text === "" ? answer.body.toString("utf8") : text);
      // judged as read: by the head epoch it was asked in, whatever moved while its rise was shared
      const kept = keptAnswer(answer, text, read, call.group, cache.settings, epoch);
      whenShared(
        call.group,
        () => {
          if (kept === undefined) {
            // an answer the cache could not split at one id (an array for one call) may hold the first
            // client's id: each other client given it asks a node itself; a body with no id member (a
            // proxy's page or JSON error, nothing) names no one, and goes to every client given it
            const mayNameId = text.includes('"id"');
            failed(flight, (given) => {
              const [first, ...others] = given as [Waiter, ...Waiter[]];
              sendEach(mayNameId ? [first] : given, answer, tier, note);
              if (mayNameId) for (const w of others) askAlone(w);
            });
            return;
          }
          const fresh = { ...kept.entry, tier };
          if (kept.failure) {
            failed(flight, (given) => deliver(given, fresh, "miss", answer.statusCode, note));
            return;
          }
          if (kept.store && sharable(kept, answer.upstream, call.group))
            keepEntry(cache, call.group, read.key, fresh);
          deliver(flight.waiters, fresh, "miss", answer.statusCode, note);
          land(flight, fresh);
        },
        broke,
      );
    });
  };
  // a final answer another instance fetched is in the shared layer; an answer read at the head never is
  const shared = cache.shared;
  if (shared === undefined || read.lifetime.kind === "head" || !shared.up) {
    fromNode();
    return;
  }
  // the label's answers forgotten while Redis answered: what it found may be of blocks no longer on the chain
  const generation = cache.generation;
  shared
    .get(sharedScope(call.group), read.key)
    .then((found) => {
      if (found === undefined || (found.tier === "archive" && !mayArchive) || cache.generation !== generation)
        return fromNode();
      looked(lookup, "hit");
      landed();
      if (missed.again !== true) cache.counts.hit++;
      cache.set(read.key, { ...found, epoch: FINAL, expiresAt: Number.POSITIVE_INFINITY });
      // an archive node's answer, at its tier's price and under its label, as a hit from this cache is
      if (found.tier === "archive" && call.tier !== undefined) note.label = call.tier.archiveLabel;
      note.tier = found.tier;
      deliver(flight.waiters, found, "hit", 200, note);
      land(flight, found);
    })
    // The shared layer answers its own failures with undefined: what lands here is a bug of the code
    // above, thrown inside a promise, where nothing else would catch it and Node would end the process.
    .catch((bug: unknown) => {
      looked(lookup, "failed");
      broke(bug);
    });
}

/** The answer for clients waiting on a flight: the first as `first` says, the others coalesced. */
function deliver(
  waiters: readonly Waiter[],
  entry: FlightEntry,
  first: "hit" | "miss",
  statusCode: number,
  note: TierFields,
): void {
  waiters.forEach((w, i) => {
    copyNote(note, w.note);
    w.note.cache = i === 0 ? first : "coalesced";
    w.wait?.end(performance.now());
    if (left(w)) return;
    sendKept(w.res, statusCode, entry, w.id, headersFor(i === 0 ? first : "coalesced", entry.tier));
    w.done();
  });
}

/**
 * A flight that failed: a gateway error, or a node's answer that is no success (`KeptAnswer.failure`, or
 * one the cache could not split at an id). Only successes are shared (docs/cache.md): the client whose call
 * it was gets the failure as `give` gives it, and the clients that joined the call ask again, all on one
 * call, whose answer they share, a failure too. A client that joined a moment before its leader's deadline
 * ran out, or before a node's "busy", had no chance of its own; asking once more, together, gives it one
 * and asks the node once more, not once per client. The WebSocket and batch calls following the flight
 * ask a node themselves, as they do when it lands with nothing to share.
 */
function failed(flight: Flight, give: (given: readonly Waiter[]) => void): void {
  const given: Waiter[] = [];
  const again: { readonly waiter: Waiter; readonly missed: Missed }[] = [];
  flight.waiters.forEach((w, i) => {
    if (i > 0 && w.askAgain !== undefined) again.push({ waiter: w, missed: w.askAgain });
    else given.push(w);
  });
  give(given);
  for (const { waiter, missed } of again) {
    waiter.wait?.end(performance.now());
    joinOrFly({ ...missed, again: true }, undefined);
  }
  land(flight, undefined);
}

/** The call's answer, read whole, as the relay for its kind of read would have fetched it. */
function fetchAnswer(
  call: UpstreamCall,
  caller: CallerSide,
  note: TierFields,
  callback: (error: GatewayError | undefined, answer?: WholeAnswer, tier?: "full" | "archive") => void,
): void {
  if (call.tier !== undefined) fetchByTier(call, call.tier, caller, note, callback);
  else if (call.byHash) fetchByHash(call, caller, note, callback);
  else fetchWhole(call, caller, note, callback);
}

/** A waiting client's own call, asked of a node alone, and its answer relayed as the node sent it. */
function askAlone(w: Waiter): void {
  w.wait?.end(performance.now());
  fetchAnswer(w.call, w.res, w.note, (error, answer, tier) => {
    if (error !== undefined || answer === undefined) return w.done(error);
    sendEach([{ ...w, wait: undefined }], answer, tier, w.note);
  });
}

/**
 * An answer with no id to put each client's in (not one answer object): the node's own body to the first
 * client, as the relay would have sent it, and to other clients that asked the same when it is no JSON
 * (no id in it is the first client's).
 */
function sendEach(
  waiters: readonly Waiter[],
  answer: WholeAnswer,
  tier: "full" | "archive" | undefined,
  note: TierFields,
): void {
  waiters.forEach((w, i) => {
    copyNote(note, w.note);
    w.note.cache = i === 0 ? "miss" : "coalesced";
    w.wait?.end(performance.now());
    if (left(w)) return;
    if (!w.res.headersSent) {
      w.res.writeHead(
        answer.statusCode,
        withAnswerTag(w.res, answer.statusCode, [
          ...answer.headers,
          ...(tier === undefined ? [] : [TIER_HEADER, tier]),
        ]),
      );
      w.res.end(answer.body);
    }
    w.done();
  });
}

/**
 * Whether the waiter's client went away before the answer came: it gets none, and its request ends as one
 * whose caller left (CLIENT_CLOSED, charged nothing), not as an answer written onto a closed response.
 */
function left(w: Waiter): boolean {
  if (!clientGone(w.res)) return false;
  w.done(new GatewayError("CLIENT_CLOSED"));
  return true;
}

/** The lookup's span ends with what it found: the metrics' outcome (gateway_cache_requests_total). */
export function looked(lookup: Span | undefined, outcome: "hit" | "miss" | "coalesced" | "failed"): void {
  if (lookup === undefined) return;
  lookup.setAttribute(CACHE, outcome);
  lookup.end(performance.now());
}

/**
 * A coalesced client's access line names the node that answered, as the first client's does, but not the
 * node's time: the node was asked once, so its time is observed once, on the first client's request
 * (gateway_upstream_duration_seconds, docs/operations.md). Copied to each follower, who waited only part
 * of it, it was counted again per follower and made the gateway's documented share negative.
 */
function copyNote(from: TierFields, to: TierFields): void {
  if (from === to) return;
  to.upstream = from.upstream;
  to.answeredBy = from.answeredBy;
  to.upstreamMs = undefined;
  to.label = from.label;
  to.tier = from.tier;
}
