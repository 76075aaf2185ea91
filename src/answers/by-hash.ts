import type { ServerResponse } from "node:http";
import { isDeepStrictEqual } from "node:util";
import { sendJson } from "../errors/respond.js";
import type { GatewayError } from "../errors/table.js";
import type { CallerSide } from "../http/client-gone.js";
import { withAnswerTag } from "../http/request-id.js";
import type { PassedCall } from "../jsonrpc/check.js";
import { type BatchLayout, partialBatchAnswer } from "../jsonrpc/merge.js";
import type { UnknownBlockAnswer } from "../registry/types.js";
import type { WholeAnswer } from "../upstream/buffered-answer.js";
import type { UpstreamFields } from "../upstream/call-run.js";
import type { UpstreamGroup } from "../upstream/group.js";
import { fetchWhole, type RelayDone, type UpstreamCall } from "../upstream/policy.js";
import type { Upstream } from "../upstream/upstreams.js";
import {
  answerTo,
  type BatchAnswer,
  batchAnswers,
  batchOf,
  batchText,
  replaceAnswer,
} from "./batch-answers.js";
import { learnHeights } from "./examined.js";
import type { ReadNeed } from "./read-need.js";

/**
 * 7, for a read that names a block by hash on a label with more than one node: read whole, and when the node
 * answers `null` (it has not seen that block yet, or is on a fork that does not have it), asked once more
 * of another node of the label, whose answer the caller gets. A caller that got a block hash from one node
 * then finds that block through the gateway, whichever node its next call lands on. In a batch the calls
 * the gateway refused before (`refusals`: a partial batch) join the answers.
 */
export function relayByHash(
  call: UpstreamCall,
  res: ServerResponse,
  note: UpstreamFields,
  done: RelayDone,
  refusals?: BatchLayout,
): void {
  if (call.reads !== undefined && !call.reads.single) {
    fetchWhole(call, res, note, (error, first) => {
      if (error !== undefined || first === undefined) return done(error);
      // the heights a partial batch's answer shows, as relay.ts relayMerged learns them
      if (refusals !== undefined && first.statusCode === 200)
        learnHeights(call, first.upstream, first.body.toString("utf8"));
      askAgainInBatch(call, call.reads?.byHashCalls ?? [], first, res, note, done, refusals);
    });
    return;
  }
  fetchByHash(call, res, note, (error, answer) => {
    if (error === undefined && answer !== undefined) sendWhole(res, answer);
    done(error);
  });
}

/** One read by hash, read whole: the first node's answer, or another node's where the first answered null. */
export function fetchByHash(
  call: UpstreamCall,
  caller: CallerSide,
  note: UpstreamFields,
  callback: (error: GatewayError | undefined, answer?: WholeAnswer) => void,
): void {
  const need = call.reads;
  fetchWhole(call, caller, note, (error, first) => {
    if (
      error !== undefined ||
      first === undefined ||
      need === undefined ||
      !answeredUnknown(first, need, call.group)
    ) {
      callback(error, first);
      return;
    }
    call.group.answers.add("by_hash_again");
    // asked again, it is a read of another node's: no write of the caller's went there
    const other = { ...call, byHash: false, exclude: first.upstream, writer: undefined };
    fetchWhole(other, caller, note, (again, second) => {
      // no other node to ask, or it failed: the first node's null is still an answer; so is it when the other
      // refused the block as one it does not know (anvil's eth_getUncleByBlockHashAndIndex: null from the node
      // with the block, "Resource not found" from the one without)
      const answered =
        again === undefined && second !== undefined && !(nullResult(first) && refusedUnknown(second, need));
      callback(undefined, answered ? second : first);
    });
  });
}

/**
 * In a batch: the calls by hash that the node answered null are asked, as one batch, of another node; its
 * answers that are not null take their places (by id).
 */
function askAgainInBatch(
  call: UpstreamCall,
  byHash: readonly PassedCall[],
  first: WholeAnswer,
  res: ServerResponse,
  note: UpstreamFields,
  done: RelayDone,
  refusals: BatchLayout | undefined,
): void {
  const answers = batchAnswers(first);
  const unanswered =
    answers === undefined
      ? []
      : byHash.filter((c) => unknownIn(answerTo(answers, c)?.value, call.reads?.unknownBlock ?? []));
  if (answers === undefined || unanswered.length === 0) {
    const merged =
      refusals === undefined
        ? undefined
        : partialBatchAnswer(first.statusCode, first.body.toString("utf8"), refusals);
    if (merged !== undefined) sendJson(res, 200, merged);
    else sendWhole(res, first);
    done();
    return;
  }
  call.group.answers.add("by_hash_again");
  // the reads alone go again (with the batch's reads at the head: `withHeadReads`): a write among the
  // batch's calls went with the first, to its node only
  const again = {
    ...call,
    body: batchOf(withHeadReads(call, unanswered)),
    byHash: false,
    exclude: first.upstream,
    write: false,
    writer: undefined,
  };
  fetchWhole(again, res, note, (error, second) => {
    const found = error === undefined && second !== undefined ? batchAnswers(second) : undefined;
    let moved = false;
    for (const c of unanswered) {
      const answer = found === undefined ? undefined : answerTo(found, c);
      const result = (answer?.value as { result?: unknown } | undefined)?.result;
      // a result, or a null where the first node refused the block as one it does not know
      const refused = !unknownIn(answerTo(answers, c)?.value, []);
      if (answer !== undefined && result !== undefined && (result !== null || refused)) {
        replaceAnswer(answers, c, answer);
        moved = true;
      }
    }
    if (moved && found !== undefined) takeHeadReads(call, answers, found);
    // each answer as its node wrote it: an id past 2^53 keeps its digits
    const text = batchText(answers);
    sendJson(res, 200, refusals === undefined ? text : (partialBatchAnswer(200, text, refusals) ?? text));
    done();
  });
}

/**
 * Whether an answer says the node does not know the block. A JSON-RPC answer: a null result, or an error
 * with one of `unknownBlock` in it (at whatever status its software answers errors: bitcoind's 500). A
 * REST answer: one of the interface's `unknownAnswers`, by status and, where one is given, by its JSON.
 * One known by its status alone (Octez's 404, which also says that a key under a block it has is missing)
 * counts only where another node is not behind the one that gave it: the probes see a new block up to a
 * probe late, so a node they show at the same head may have the block just made; one they show behind has
 * not seen what the first had not.
 */
function answeredUnknown(answer: WholeAnswer, need: ReadNeed, group: UpstreamGroup): boolean {
  if (need.unknownAnswers.length > 0)
    return need.unknownAnswers.some(
      (known) => isAnswer(answer, known) && ("body" in known || anotherNotBehind(group, answer.upstream)),
    );
  const unknown = need.unknownBlock;
  if (answer.statusCode !== 200 && unknown.length === 0) return false;
  try {
    return unknownIn(JSON.parse(answer.body.toString("utf8")), unknown);
  } catch {
    return false;
  }
}

/** A JSON-RPC answer whose result is null. */
function nullResult(answer: WholeAnswer): boolean {
  try {
    return unknownIn(JSON.parse(answer.body.toString("utf8")), []);
  } catch {
    return false;
  }
}

/** A JSON-RPC answer that is an error naming the block as one the node does not know (`unknownBlock`). */
function refusedUnknown(answer: WholeAnswer, need: ReadNeed): boolean {
  if (need.unknownBlock.length === 0) return false;
  try {
    const value = JSON.parse(answer.body.toString("utf8")) as { error?: unknown };
    return value?.error != null && unknownIn(value, need.unknownBlock);
  } catch {
    return false;
  }
}

function anotherNotBehind(group: UpstreamGroup, node: Upstream): boolean {
  const head = node.health.head ?? -1;
  return group.members.some((m) => m !== node && m.health.inRotation && (m.health.head ?? head) >= head);
}

function isAnswer(answer: WholeAnswer, known: UnknownBlockAnswer): boolean {
  if (answer.statusCode !== known.status) return false;
  if (!("body" in known)) return true;
  try {
    return isDeepStrictEqual(JSON.parse(answer.body.toString("utf8")), known.body);
  } catch {
    return false;
  }
}

/** Whether one call's answer is null, or an error naming the block as one the node does not know. */
export function unknownIn(answer: unknown, unknown: readonly string[]): boolean {
  if (answer === null || typeof answer !== "object") return false;
  const { result, error } = answer as { result?: unknown; error?: unknown };
  if (error !== undefined && error !== null) {
    const text = JSON.stringify(error);
    return unknown.some((wanted) => text.includes(wanted));
  }
  return "result" in answer && result === null;
}

/**
 * A batch's calls by hash asked again of another node, with the batch's reads at the head: a node that has
 * the block has its own head at or past it, and a caller told that block must not be told, in the same
 * batch, a head below it (every call of a batch sees one head).
 */
export function withHeadReads(call: UpstreamCall, again: readonly PassedCall[]): readonly PassedCall[] {
  const atHead = call.reads?.atHeadCalls;
  return atHead === undefined ? again : [...again, ...atHead];
}

/** Once the other node had the block: the batch's reads at the head are its answers, where it answered them. */
export function takeHeadReads(
  call: UpstreamCall,
  answers: BatchAnswer[],
  found: readonly BatchAnswer[],
): void {
  for (const c of call.reads?.atHeadCalls ?? []) {
    const answer = answerTo(found, c);
    if (answer !== undefined && resultIn(answer.value)) replaceAnswer(answers, c, answer);
  }
}

/** Whether one call's answer is a result (JSON-RPC 1.0 writes `"error": null` beside it), not an error. */
function resultIn(answer: unknown): boolean {
  return (
    typeof answer === "object" &&
    answer !== null &&
    "result" in answer &&
    !("error" in answer && (answer as { error?: unknown }).error != null)
  );
}

/** A whole answer as the node gave it, with the gateway's answer headers. */
export function sendWhole(res: ServerResponse, answer: WholeAnswer): void {
  if (res.headersSent) return;
  res.writeHead(answer.statusCode, withAnswerTag(res, answer.statusCode, answer.headers as string[]));
  res.end(answer.body);
}
