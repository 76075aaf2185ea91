import type { ServerResponse } from "node:http";
import type { Span } from "@opentelemetry/api";
import { archivedCall, fetchBatchByTier, TIER_HEADER, type TierFields } from "../answers/archive.js";
import { batchText } from "../answers/batch-answers.js";
import { learnHeights, showsHeight } from "../answers/examined.js";
import { ANY_ORIGIN } from "../errors/respond.js";
import { addAnswerTag, requestIdOf, withAnswerTag } from "../http/request-id.js";
import type { PassedCall } from "../jsonrpc/check.js";
import { idKey, isPlainId } from "../jsonrpc/id-key.js";
import { type BatchLayout, inPlaces } from "../jsonrpc/merge.js";
import { scanMembers } from "../jsonrpc/scan.js";
import type { WholeAnswer } from "../upstream/buffered-answer.js";
import { endsBy } from "../upstream/caller-end.js";
import { fetchWhole, type RelayDone, type UpstreamCall } from "../upstream/policy.js";
import type { Upstream } from "../upstream/upstreams.js";
import { type AnswerCache, type CacheEntry, FINAL, withId } from "./answer-cache.js";
import type { CacheRead } from "./cache-read.js";
import { CACHE_HEADER, EXPOSED } from "./cached-response.js";
import { failedAnswer, keepEntry, keptMembers, sharable } from "./kept-answer.js";
import {
  type CacheFields,
  type FlightEntry,
  type FlightFollower,
  followFlight,
  looked,
} from "./relay-cached.js";
import { sharedScope } from "./shared-answers.js";
import { SharedCaller } from "./shared-caller.js";
import {
  followSocketFlight,
  landSocketFlight,
  openSocketFlight,
  type SocketFlight,
} from "./socket-flights.js";

/** One call of a batch, and what the cache may answer it with (none: the node answers it). */
export interface BatchRead {
  readonly call: PassedCall;
  readonly read: CacheRead | undefined;
}

/**
 * 7, for a batch the cache may answer in part (docs/cache.md): the calls it holds live answers to are
 * answered from it, then those final answers another instance shared through Redis, and the rest go to a
 * node as one batch, whose answers are kept as a single call's would be (and shared when final). The caller
 * gets one array, each answer with its own id, in the order of its calls; `x-cache` says `hit` when no call
 * went to a node. An answer the node gave in no array (it refused the batch) goes to the caller as the node
 * sent it. The gateway's refusals of a batch's other calls (`refusals`) take their calls' places, as for any partial
 * batch (src/jsonrpc/merge.ts).
 */
export function relayCachedBatch(
  call: UpstreamCall,
  batch: readonly BatchRead[],
  cache: AnswerCache,
  res: ServerResponse,
  note: BatchFields,
  done: RelayDone,
  refusals: BatchLayout = [],
): void {
  const epoch = call.group.served.epoch;
  const lookup = call.trace?.step("cache lookup");
  // a batch whose reads of old state may reach the archive nodes (src/answers/archive.ts) is told by tier
  const mayArchive = call.tier?.mayArchive ?? false;
  if (call.tier !== undefined) note.tier = "full";
  const entries = batch.map(({ read }) =>
    read === undefined ? undefined : cache.get(read.key, epoch, mayArchive),
  );
  // Every call in a batch sees one head: when a call whose answer depends on the head goes to a node, the
  // calls read at the head go with it, not from answers kept at the head the node may have passed.
  const atNodeHead = batch.some(({ read }, i) => entries[i] === undefined && dependsOnHead(read));
  const parts: (Buffer | undefined)[] = batch.map(({ call: c, read }, i) => {
    const entry = entries[i];
    if (entry === undefined || (atNodeHead && read?.lifetime.kind === "head")) return undefined;
    cache.counts.hit++;
    answeredWithout(note, c, entry.tier);
    return withId(entry, c.id ?? "null");
  });
  // the node calls belong to every client waiting on them: this one, and identical calls' that follow them
  const caller = new SharedCaller();
  caller.join(res);
  const run = { call, batch, cache, res, caller, note, done, epoch, parts, lookup, refusals, mayArchive };
  // a final answer another instance fetched is in the shared layer; an answer read at the head never is
  const shared = cache.shared;
  const inSharedLayer = batch.flatMap(({ call: c, read }, i) =>
    parts[i] === undefined && read !== undefined && read.lifetime.kind !== "head" ? [{ c, read, i }] : [],
  );
  if (shared === undefined || !shared.up || inSharedLayer.length === 0) {
    fromNode(run);
    return;
  }
  // the label's answers forgotten while Redis answered: what it found may be of blocks no longer on the chain
  const generation = cache.generation;
  Promise.all(inSharedLayer.map(({ read }) => shared.get(sharedScope(call.group), read.key)))
    .then((found) => {
      if (cache.generation !== generation) return fromNode(run);
      found.forEach((entry, n) => {
        const { c, read, i } = inSharedLayer[n] as (typeof inSharedLayer)[number];
        // an archive node's answer is kept for keys with archive access alone
        if (entry === undefined || (entry.tier === "archive" && !mayArchive)) return;
        cache.counts.hit++;
        answeredWithout(note, c, entry.tier);
        cache.set(read.key, { ...entry, epoch: FINAL, expiresAt: Number.POSITIVE_INFINITY });
        parts[i] = withId(entry, c.id ?? "null");
      });
      fromNode(run);
    })
    // the shared layer answers its own failures with undefined: a bug of the code above, which the
    // request's error boundary logs with its stack (relay-cached.ts says why it must be caught here)
    .catch((bug: unknown) => {
      looked(lookup, "failed");
      done(bug);
    });
}

/**
 * Whether a call's answer depends on the head of the node that answers it: one the cache does not read, or
 * one that is not the same on every node whatever its head (`always`).
 */
function dependsOnHead(read: CacheRead | undefined): boolean {
  return read === undefined || read.lifetime.kind !== "always";
}

/** The batch's state between its lookups and the node's answer. */
interface BatchRun {
  readonly call: UpstreamCall;
  readonly batch: readonly BatchRead[];
  readonly cache: AnswerCache;
  readonly res: ServerResponse;
  /** Whom its node calls belong to: its client, and the clients of calls that follow them. */
  readonly caller: SharedCaller;
  readonly note: BatchFields;
  readonly done: RelayDone;
  readonly epoch: number;
  /** Each call's answer with its id, once the cache or the node gave it. */
  readonly parts: (Buffer | undefined)[];
  /** The lookup's span, when the request is traced: a hit when no call goes to a node. */
  readonly lookup: Span | undefined;
  /** The gateway's refusals of the batch's other calls, which end the caller's array. */
  readonly refusals: BatchLayout;
  /** Whether the caller's key may read what the archive nodes answered. */
  readonly mayArchive: boolean;
}

/** Where the batch's relay notes what it did: the tier too, when its reads of old state are told by tier. */
type BatchFields = TierFields & Pick<CacheFields, "cache" | "cachedMethods" | "cachedArchivedMethods">;

/**
 * The calls no cache answered: of identical calls, one is asked (in this batch, or another request's or a
 * connection's identical call in flight is waited on); the rest go to a node as one batch, whose answers
 * are kept and given to the calls waiting on them; those whose wait had nothing to share are asked after.
 * The caller's array once every call has its answer.
 */
function fromNode(run: BatchRun): void {
  const { batch, res, note, done, parts, lookup, refusals } = run;
  const missing = batch.flatMap((_, i) => (parts[i] === undefined ? [i] : []));
  looked(lookup, missing.length === 0 ? "hit" : "miss");
  if (missing.length === 0) {
    note.cache = "hit";
    sendArray(res, parts, refusals, "hit", tierHeader(run));
    done();
    return;
  }
  const calls = identicalCalls(run, missing);
  answerAll(run, calls)
    // a head its answers showed goes out once the other instances have it (answers/examined.ts whenShared)
    .then(async (outcome) => {
      await run.call.group.served.sharing;
      return outcome;
    })
    .then((outcome) => {
      if (outcome === undefined) return done();
      if ("statusCode" in outcome) {
        // the node refused the batch whole: its answer, as it sent it, and no call of it answered by the cache
        note.cachedMethods = undefined;
        note.cachedArchivedMethods = undefined;
        res.writeHead(
          outcome.statusCode,
          withAnswerTag(res, outcome.statusCode, outcome.headers as string[]),
        );
        res.end(outcome.body);
        return done();
      }
      note.cache = outcome.asked ? "miss" : "coalesced";
      sendArray(res, parts, refusals, note.cache, tierHeader(run));
      done();
    })
    // fetchWhole's failures and this code's bugs: the request's error boundary answers and logs them
    .catch((error: unknown) => done(error));
}

/** How a batch's missing calls get their answers: asked, copied from an identical one, or waited for. */
interface IdenticalCalls {
  /** The calls that go to a node. */
  readonly asks: number[];
  /** Each asking or waiting call's identical calls in the batch, which take its answer with their own ids. */
  readonly copies: Map<number, number[]>;
  /** The calls that wait on an identical call in flight, with its answer (undefined: none to share). */
  readonly waits: { readonly index: number; readonly landed: Promise<FlightEntry | undefined> }[];
  /** The flights the asked calls opened, which identical calls elsewhere wait on. */
  readonly opened: Map<number, SocketFlight>;
}

function identicalCalls(
  { batch, cache, epoch, res, caller }: BatchRun,
  missing: readonly number[],
): IdenticalCalls {
  const calls: IdenticalCalls = { asks: [], copies: new Map(), waits: [], opened: new Map() };
  const first = new Map<string, number>();
  for (const i of missing) {
    const read = (batch[i] as BatchRead).read;
    // a call whose id a node may refuse leads nothing: its answer may be an error about its id
    if (read === undefined || !isPlainId(read.id)) {
      calls.asks.push(i);
      continue;
    }
    const leader = first.get(read.key);
    if (leader !== undefined) {
      calls.copies.get(leader)?.push(i);
      continue;
    }
    first.set(read.key, i);
    calls.copies.set(i, []);
    // a call sent first to its caller's write's node shares no flight (cache-read.ts `ownNode`)
    if (read.ownNode === true) {
      calls.asks.push(i);
      continue;
    }
    // a read at the head is asked with the batch's other calls: an identical call in flight may be on a
    // node at another head than theirs
    if (read.lifetime.kind === "head") {
      calls.asks.push(i);
      calls.opened.set(i, openSocketFlight(cache, read.key, epoch, caller));
      continue;
    }
    let follow: FlightFollower = () => {};
    const landed = new Promise<FlightEntry | undefined>((resolve) => {
      follow = resolve;
    });
    if (
      followSocketFlight(cache, read.key, epoch, follow, res) ||
      followFlight(cache, read.key, epoch, follow, res)
    )
      calls.waits.push({ index: i, landed });
    else {
      calls.asks.push(i);
      calls.opened.set(i, openSocketFlight(cache, read.key, epoch, caller));
    }
  }
  return calls;
}

/**
 * Every missing call's answer into `parts`: undefined when the caller left, the node's answer when it
 * refused the batch whole, else whether any call went to a node.
 */
async function answerAll(
  run: BatchRun,
  calls: IdenticalCalls,
): Promise<WholeAnswer | { readonly asked: boolean } | undefined> {
  const { cache, parts, batch } = run;
  // the batch's own calls first: when the node refused them, or the caller left, the answer goes at once,
  // whatever the calls waiting on others' flights would have had
  const asked = calls.asks.length > 0 ? await ask(run, calls.asks, calls) : true;
  if (asked !== true) return asked;
  const again: number[] = [];
  for (const { index, landed } of calls.waits) {
    const entry = await landed;
    if (entry === undefined || (entry.tier === "archive" && !run.mayArchive)) {
      again.push(index);
      continue;
    }
    for (const i of [index, ...(calls.copies.get(index) ?? [])]) {
      cache.counts.coalesced++;
      answeredWithout(run.note, (batch[i] as BatchRead).call, entry.tier);
      parts[i] = withId(entry, (batch[i] as BatchRead).call.id ?? "null");
    }
  }
  if (again.length === 0) return { asked: calls.asks.length > 0 };
  // the calls waited on had nothing to share (their node failed): asked of a node themselves
  const late = await ask(run, again, { ...calls, opened: new Map() });
  return late === true ? { asked: true } : late;
}

/**
 * The calls at `indexes` to a node as one batch, their answers kept and into `parts` (their identical
 * calls' too), and given to the calls waiting on them: true once done, the node's answer when it refused
 * the batch whole, undefined when the caller left.
 */
async function ask(
  run: BatchRun,
  indexes: readonly number[],
  calls: IdenticalCalls,
): Promise<true | WholeAnswer | undefined> {
  try {
    return await askNode(run, indexes, calls);
  } finally {
    // a flight its answer did not land (the node refused the batch whole, a failure, the caller left)
    // has nothing to share: the calls waiting on it go to a node at once
    for (const i of indexes) {
      const flight = calls.opened.get(i);
      if (flight !== undefined) landSocketFlight(run.cache, flight, undefined);
    }
  }
}

async function askNode(
  run: BatchRun,
  indexes: readonly number[],
  calls: IdenticalCalls,
): Promise<true | WholeAnswer | undefined> {
  const { call, batch, cache, note, epoch, parts } = run;
  for (const i of indexes) if ((batch[i] as BatchRead).read !== undefined) cache.counts.miss++;
  const asked = await fetchAsked(run, indexes);
  if (asked === undefined) return undefined;
  const { answer, text, archived, required, nodeOf } = asked;
  if (answer?.statusCode === 200 && showsHeight(call)) learnHeights(call, answer.upstream, text);
  const elements = text.trimStart().startsWith("[") ? scanMembers(text) : undefined;
  if (answer !== undefined && (answer.statusCode !== 200 || elements === undefined)) return answer;
  if (elements === undefined) return true;
  const byId = new Map(elements.map((members) => [idKey(members.get("id")), members]));
  for (const i of indexes) {
    const { call: c, read } = batch[i] as BatchRead;
    const members = byId.get(idKey(c.id));
    // the full node that answered it; an archive node's answer is about blocks long final
    const node = archived.has(c) ? undefined : (answer?.upstream ?? nodeOf?.(c));
    const kept =
      members === undefined
        ? undefined
        : keptMembers(members, 200, read ?? UNCACHED, call.group, cache.settings, epoch, node);
    // the gateway's own refusal (ARCHIVE_REQUIRED) answers this key alone, and is never kept; nor is an
    // answer read at the head by a node below the served head
    const keepable = kept !== undefined && !required.has(c) && sharable(kept, node, call.group);
    const tier: CacheEntry["tier"] =
      call.tier === undefined ? undefined : archived.has(c) ? "archive" : "full";
    // a socket flight's followers may be any key's: an archive answer is shared through the cache alone,
    // which gives it to keys with archive access only
    const flight = calls.opened.get(i);
    const shared =
      keepable && tier !== "archive"
        ? {
            ...kept.entry,
            tier,
            ...(failedAnswer(members as ReadonlyMap<string, string>, kept) ? FAILED : {}),
          }
        : undefined;
    if (flight !== undefined) landSocketFlight(cache, flight, shared);
    if (kept === undefined) continue;
    if (read !== undefined && kept.store && keepable)
      keepEntry(cache, call.group, read.key, { ...kept.entry, tier });
    parts[i] = withId(kept.entry, c.id ?? "null");
    for (const copy of calls.copies.get(i) ?? []) {
      cache.counts.coalesced++;
      answeredWithout(note, (batch[copy] as BatchRead).call, tier);
      parts[copy] = withId(kept.entry, (batch[copy] as BatchRead).call.id ?? "null");
    }
  }
  return true;
}

/** The node's answer to the calls asked, as text; by tier, which of them the archive nodes answered or refused. */
interface AskedAnswer {
  /** The node's answer as it came; none for answers that two tiers or two nodes joined (a 200 array). */
  readonly answer: WholeAnswer | undefined;
  /** Of joined answers, the full node that answered a call. */
  readonly nodeOf?: ((call: PassedCall) => Upstream | undefined) | undefined;
  readonly text: string;
  readonly archived: ReadonlySet<PassedCall>;
  readonly required: ReadonlySet<PassedCall>;
}

const NONE: ReadonlySet<PassedCall> = new Set();

/**
 * The calls at `indexes` to a node as one batch, read whole; a batch with reads of old state by tier
 * (src/answers/archive.ts): its calls a full node refused as missing state answered by the archive nodes,
 * or refused as ARCHIVE_REQUIRED. Undefined when the caller left.
 */
function fetchAsked(run: BatchRun, indexes: readonly number[]): Promise<AskedAnswer | undefined> {
  const { call, batch, res, caller, note } = run;
  const asked = indexes.map((i) => (batch[i] as BatchRead).call);
  const sub = { ...call, body: `[${asked.map((c) => c.json).join(",")}]`, cacheBatch: undefined };
  const tier = call.tier;
  return new Promise((resolve, reject) => {
    // a bug thrown where the node's answer is read (upstream/caller-end.ts) fails the ask: its flights
    // land with nothing, and the request ends at its error boundary (fromNode)
    endsBy(caller, reject);
    if (tier?.batch === undefined)
      fetchWhole(sub, caller, note, (error, answer) => {
        if (error !== undefined) return reject(error);
        resolve(answer && asItCame(answer));
      });
    else
      fetchBatchByTier(sub, tier, tier.batch, caller, requestIdOf(res), note, (error, tiered) => {
        if (error !== undefined) return reject(error);
        if (tiered === undefined) return resolve(undefined);
        if ("whole" in tiered) return resolve(asItCame(tiered.whole));
        resolve({
          answer: undefined,
          text: batchText(tiered.answers),
          archived: new Set(tiered.archived),
          required: new Set(tiered.required),
          nodeOf: tiered.nodeOf,
        });
      });
  });
}

/** A node's answer as it came: no call of it answered by the archive nodes, nor refused for them. */
function asItCame(answer: WholeAnswer): AskedAnswer {
  return { answer, text: answer.body.toString("utf8"), archived: NONE, required: NONE };
}

/** The batch's `x-upstream-tier`, when its reads of old state are told by tier. */
function tierHeader(run: BatchRun): string | undefined {
  if (run.call.tier === undefined) return undefined;
  return run.note.tier === "archive" ? "full+archive" : "full";
}

/**
 * A call of the batch answered with no node call of its own: priced at the plan's cachedShare, and, given an
 * archive node's kept answer, at the archive's price too (pipeline/exchange-units.ts `batchServed`).
 */
function answeredWithout(note: BatchFields, call: PassedCall, tier: CacheEntry["tier"]): void {
  note.cachedMethods ??= [];
  note.cachedMethods.push(call.method);
  if (tier !== "archive") return;
  archivedCall(note, call.method);
  note.cachedArchivedMethods ??= [];
  note.cachedArchivedMethods.push(call.method);
}

const OPEN = Buffer.from("[");
const COMMA = Buffer.from(",");
const CLOSE = Buffer.from("]");

/**
 * The batch's answers as one JSON array, in the order of its calls, the gateway's refusals in their places;
 * a call the node left out has none.
 */
function sendArray(
  res: ServerResponse,
  parts: readonly (Buffer | undefined)[],
  refusals: BatchLayout,
  outcome: string,
  tier: string | undefined,
): void {
  const pieces: Buffer[] = [OPEN];
  for (const part of inPlaces(refusals, parts, (refusal) => Buffer.from(refusal))) {
    if (part === undefined) continue;
    if (pieces.length > 1) pieces.push(COMMA);
    pieces.push(part);
  }
  pieces.push(CLOSE);
  const body = Buffer.concat(pieces);
  res.writeHead(
    200,
    addAnswerTag(res, 200, {
      ...EXPOSED,
      [CACHE_HEADER]: outcome,
      ...(tier === undefined ? {} : { [TIER_HEADER]: tier }),
      ...ANY_ORIGIN,
      "content-type": "application/json",
      "content-length": body.length,
    }),
  );
  res.end(body);
}

const FAILED = { failed: true } as const;

/** A call the cache may not answer: its answer is put back together, never kept. */
const UNCACHED: CacheRead = { key: "", lifetime: { kind: "head" }, id: "null", rules: {} };
