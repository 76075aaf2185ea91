import type { ServerResponse } from "node:http";
import type { Span } from "@opentelemetry/api";
import { learnHeights, showsHeight } from "../answers/examined.js";
import { ANY_ORIGIN } from "../errors/respond.js";
import { addRequestId, withRequestId } from "../http/request-id.js";
import type { PassedCall } from "../jsonrpc/check.js";
import { idKey } from "../jsonrpc/id-key.js";
import { scanMembers } from "../jsonrpc/scan.js";
import type { UpstreamFields } from "../upstream/call-run.js";
import { fetchWhole, type RelayDone, type UpstreamCall } from "../upstream/policy.js";
import { type AnswerCache, FINAL, withId } from "./answer-cache.js";
import type { CacheRead } from "./cache-read.js";
import { keptMembers } from "./kept-answer.js";
import { CACHE_HEADER, EXPOSED, looked } from "./relay-cached.js";

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
 * sent it. The gateway's refusals of a batch's other calls (`refusals`) end the array, as for any partial
 * batch (src/jsonrpc/merge.ts).
 */
export function relayCachedBatch(
  call: UpstreamCall,
  batch: readonly BatchRead[],
  cache: AnswerCache,
  res: ServerResponse,
  note: UpstreamFields & { cache: string | undefined },
  done: RelayDone,
  refusals: readonly string[] = [],
): void {
  const epoch = call.group.served.epoch;
  const lookup = call.trace?.step("cache lookup");
  const parts: (Buffer | undefined)[] = batch.map(({ call: c, read }) => {
    const entry = read === undefined ? undefined : cache.get(read.key, epoch, false);
    if (entry === undefined) return undefined;
    cache.counts.hit++;
    return withId(entry, c.id ?? "null");
  });
  const run = { call, batch, cache, res, note, done, epoch, parts, lookup, refusals };
  // a final answer another instance fetched is in the shared layer; an answer read at the head never is
  const shared = cache.shared;
  const sharable = batch.flatMap(({ call: c, read }, i) =>
    parts[i] === undefined && read !== undefined && read.lifetime.kind !== "head" ? [{ c, read, i }] : [],
  );
  if (shared === undefined || !shared.up || sharable.length === 0) {
    fromNode(run);
    return;
  }
  Promise.all(sharable.map(({ read }) => shared.get(call.group.label, read.key)))
    .then((found) => {
      found.forEach((entry, n) => {
        const { c, read, i } = sharable[n] as (typeof sharable)[number];
        // an archive node's answer is kept for keys with archive access, which a batch never reads as
        if (entry === undefined || entry.tier === "archive") return;
        cache.counts.hit++;
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

/** The batch's state between its lookups and the node's answer. */
interface BatchRun {
  readonly call: UpstreamCall;
  readonly batch: readonly BatchRead[];
  readonly cache: AnswerCache;
  readonly res: ServerResponse;
  readonly note: UpstreamFields & { cache: string | undefined };
  readonly done: RelayDone;
  readonly epoch: number;
  /** Each call's answer with its id, once the cache or the node gave it. */
  readonly parts: (Buffer | undefined)[];
  /** The lookup's span, when the request is traced: a hit when no call goes to a node. */
  readonly lookup: Span | undefined;
  /** The gateway's refusals of the batch's other calls, which end the caller's array. */
  readonly refusals: readonly string[];
}

/** The calls no cache answered, to a node as one batch; the caller's array once it answers. */
function fromNode({ call, batch, cache, res, note, done, epoch, parts, lookup, refusals }: BatchRun): void {
  const missing = batch.filter((_, i) => parts[i] === undefined);
  looked(lookup, missing.length === 0 ? "hit" : "miss");
  if (missing.length === 0) {
    note.cache = "hit";
    sendArray(res, parts, refusals, "hit");
    done();
    return;
  }
  for (const { read } of missing) if (read !== undefined) cache.counts.miss++;
  const body = `[${missing.map(({ call: c }) => c.json).join(",")}]`;
  fetchWhole({ ...call, body, cacheBatch: undefined }, res, note, (error, answer) => {
    if (error !== undefined || answer === undefined) return done(error);
    const text = answer.body.toString("utf8");
    if (answer.statusCode === 200 && showsHeight(call)) learnHeights(call, answer.upstream, text);
    const elements = text.trimStart().startsWith("[") ? scanMembers(text) : undefined;
    if (answer.statusCode !== 200 || elements === undefined) {
      res.writeHead(answer.statusCode, withRequestId(res, answer.headers as string[]));
      res.end(answer.body);
      return done();
    }
    const byId = new Map(elements.map((members) => [idKey(members.get("id")), members]));
    batch.forEach(({ call: c, read }, i) => {
      if (parts[i] !== undefined) return;
      const members = byId.get(idKey(c.id));
      if (members === undefined) return;
      const kept = keptMembers(members, 200, read ?? UNCACHED, call.group, cache.settings, epoch);
      if (kept === undefined) return;
      if (read !== undefined && kept.store) {
        const entry = { ...kept.entry, tier: undefined };
        cache.set(read.key, entry);
        if (entry.epoch === FINAL) cache.shared?.put(call.group.label, read.key, entry);
      }
      parts[i] = withId(kept.entry, c.id ?? "null");
    });
    sendArray(res, parts, refusals, "miss");
    done();
  });
}

const OPEN = Buffer.from("[");
const COMMA = Buffer.from(",");
const CLOSE = Buffer.from("]");

/**
 * The batch's answers as one JSON array, in the order of its calls, then the gateway's refusals; a call the
 * node left out has none.
 */
function sendArray(
  res: ServerResponse,
  parts: readonly (Buffer | undefined)[],
  refusals: readonly string[],
  outcome: "hit" | "miss",
): void {
  const pieces: Buffer[] = [OPEN];
  for (const part of [...parts, ...refusals.map((refusal) => Buffer.from(refusal))]) {
    if (part === undefined) continue;
    if (pieces.length > 1) pieces.push(COMMA);
    pieces.push(part);
  }
  pieces.push(CLOSE);
  const body = Buffer.concat(pieces);
  res.writeHead(
    200,
    addRequestId(res, {
      ...EXPOSED,
      [CACHE_HEADER]: outcome,
      ...ANY_ORIGIN,
      "content-type": "application/json",
      "content-length": body.length,
    }),
  );
  res.end(body);
}

/** A call the cache may not answer: its answer is put back together, never kept. */
const UNCACHED: CacheRead = { key: "", lifetime: { kind: "head" }, id: "null", rules: {} };
