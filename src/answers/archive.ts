import type { ServerResponse } from "node:http";
import { rpcErrorJson, sendJson } from "../errors/respond.js";
import { GatewayError, hasRpcNumber } from "../errors/table.js";
import type { CallerSide } from "../http/client-gone.js";
import { requestIdOf, withAnswerTag } from "../http/request-id.js";
import type { PassedCall } from "../jsonrpc/check.js";
import { type BatchLayout, partialBatchAnswer } from "../jsonrpc/merge.js";
import type { WholeAnswer } from "../upstream/buffered-answer.js";
import type { UpstreamFields } from "../upstream/call-run.js";
import type { UpstreamGroup } from "../upstream/group.js";
import { fetchWhole, type RelayDone, type UpstreamCall } from "../upstream/policy.js";
import type { Upstream } from "../upstream/upstreams.js";
import {
  answerOf,
  answerTo,
  type BatchAnswer,
  batchAnswers,
  batchOf,
  batchText,
  replaceAnswer,
} from "./batch-answers.js";
import { takeHeadReads, unknownIn, withHeadReads } from "./by-hash.js";

/** The response header that says which tier of nodes answered a read of state at a numbered block. */
export const TIER_HEADER = "x-upstream-tier";

/**
 * How a read of state at a numbered block, on a mainnet full label, may reach the network's archive
 * endpoint (docs/upstreams.md, "Archive"). Stage 6 plans it (pipeline/stages.ts).
 */
export interface TierPlan {
  /** The block is older than a full node keeps: the read goes to the archive nodes at once. */
  readonly direct: boolean;
  /** In a batch: its calls that read state at a named block, which alone go on when a full node refuses them. */
  readonly batch: readonly PassedCall[] | undefined;
  readonly archiveLabel: string;
  /** The archive label's upstreams for the same mount, when the deployment has any. */
  readonly archiveGroup: UpstreamGroup | undefined;
  /** Whether the caller's key has archive access. */
  readonly mayArchive: boolean;
  /** Error texts of a full node that no longer has the block's state. */
  readonly missingState: readonly string[];
  /** Error texts of a full node that may have dropped a history read's answer, or never had it (`unknownHistory`). */
  readonly unknownHistory: readonly string[];
}

/** Where a served read is counted: the access line's label becomes the archive label when archive answered. */
export interface TierFields extends UpstreamFields {
  label: string | undefined;
  tier: string | undefined;
  /** A batch's calls the archive nodes answered, by method: the rest of it a full node did. */
  archivedMethods?: string[] | undefined;
  /**
   * A batch's calls the gateway answered for the archive nodes, by method: ARCHIVE_REQUIRED, or the error
   * of archive nodes that could not serve them (none, none in rotation, none in time). Refused by the
   * gateway, they cost nothing.
   */
  requiredMethods?: string[] | undefined;
  /** The code those calls were answered with: ARCHIVE_REQUIRED when unset. */
  requiredCode?: string | undefined;
}

/** A batch's call the archive nodes answered (or their answer kept in the cache): priced as theirs. */
export function archivedCall(note: TierFields, method: string): void {
  note.tier = "archive";
  note.archivedMethods ??= [];
  note.archivedMethods.push(method);
}

/**
 * 7, for a read of state at a numbered block on a full label. Sent to a full node and read whole: when that
 * node says it has no such state, the read is sent to the archive nodes once more. A read older than a full
 * node keeps goes to the archive nodes at once. A key without archive access gets ARCHIVE_REQUIRED, naming
 * the archive label, in place of the node's error, and never archive data. The answer carries
 * `x-upstream-tier: full` or `archive`; one from the archive is counted under the archive label.
 */
export function relayByTier(
  call: UpstreamCall,
  tier: TierPlan,
  res: ServerResponse,
  note: TierFields,
  done: RelayDone,
  refusals?: BatchLayout,
): void {
  if (tier.batch !== undefined) {
    relayBatchByTier(call, tier, tier.batch, res, note, done, refusals);
    return;
  }
  fetchByTier(call, tier, res, note, (error, answer, served) => {
    if (error === undefined && answer !== undefined && served !== undefined) send(res, answer, served);
    done(error);
  });
}

/**
 * One read of state at a named block, read whole (`relayByTier`): the answer, and the tier that gave it.
 * The access line's label and tier say where it was served.
 */
export function fetchByTier(
  call: UpstreamCall,
  tier: TierPlan,
  caller: CallerSide,
  note: TierFields,
  callback: (error: GatewayError | undefined, answer?: WholeAnswer, served?: "full" | "archive") => void,
): void {
  // `unlessUnknown`: the full node's answer of history it may have dropped, which stays the answer (and
  // its price, the full tier's) when the archive does not know it either: a transaction that never was
  const fromArchive = (unlessUnknown?: WholeAnswer): void => {
    const group = tier.archiveGroup;
    call.group.answers.add(
      !tier.mayArchive ? "archive_required" : tier.direct ? "archive_direct" : "archive_again",
    );
    if (!tier.mayArchive) callback(archiveRequired(tier, call.reads?.stateByHash === true));
    else if (group === undefined) callback(noArchiveNode(tier.archiveLabel));
    else
      fetchWhole({ ...call, group, tier: undefined }, caller, note, (error, answer) => {
        if (error !== undefined || answer === undefined)
          return callback(error === undefined ? error : archiveFailed(tier.archiveLabel, error));
        if (unlessUnknown !== undefined && errorNames(answer, tier.unknownHistory))
          return full(unlessUnknown);
        note.label = tier.archiveLabel;
        note.tier = "archive";
        callback(undefined, answer, "archive");
      });
  };
  if (tier.direct) {
    fromArchive();
    return;
  }
  const full = (answer: WholeAnswer): void => {
    note.tier = "full";
    callback(undefined, answer, "full");
  };
  const unknown = unknownTexts(tier, call);
  fetchWhole({ ...call, tier: undefined }, caller, note, (error, answer) => {
    if (error !== undefined || answer === undefined) callback(error);
    else if (mayBeDropped(tier, call.reads?.historyFrom !== undefined, answer)) fromArchive(answer);
    else if (!errorNames(answer, unknown)) full(answer);
    else if (call.reads?.stateByHash === true && call.group.members.length > 1) {
      // A block named by hash that this full node does not know may be one it has not seen yet, not one
      // too old for it (the caller had the hash from a node ahead): another full node is asked first.
      call.group.answers.add("by_hash_again");
      const other = { ...call, tier: undefined, exclude: answer.upstream, writer: undefined };
      fetchWhole(other, caller, note, (again, second) => {
        if (again === undefined && second !== undefined && !errorNames(second, unknown)) full(second);
        else if (errorNames(second ?? answer, tier.missingState)) fromArchive();
        else full(second ?? answer);
      });
    } else if (errorNames(answer, tier.missingState)) fromArchive();
    else full(answer);
  });
}

/**
 * Whether a history read's error may be of history the full node dropped, for a key that may ask the
 * archive (registry `unknownHistory`): a key without archive access gets the node's answer, which may be
 * true (no such transaction).
 */
function mayBeDropped(tier: TierPlan, history: boolean, answer: WholeAnswer): boolean {
  return (
    tier.mayArchive && history && tier.unknownHistory.length > 0 && errorNames(answer, tier.unknownHistory)
  );
}

/**
 * 7, for a batch with reads of state at a named block (`fetchBatchByTier`): the node's answer as it came
 * when no call's answer was replaced, else the answers with `x-upstream-tier: full+archive` when the archive
 * nodes gave some; the calls the gateway refused before (`refusals`: a partial batch) join them.
 */
function relayBatchByTier(
  call: UpstreamCall,
  tier: TierPlan,
  stateCalls: readonly PassedCall[],
  res: ServerResponse,
  note: TierFields,
  done: RelayDone,
  refusals: BatchLayout | undefined,
): void {
  fetchBatchByTier(call, tier, stateCalls, res, requestIdOf(res), note, (error, tiered) => {
    if (error !== undefined || tiered === undefined) return done(error);
    const tierHeader = {
      [TIER_HEADER]: "whole" in tiered || tiered.archived.length === 0 ? "full" : "full+archive",
    };
    const text = "whole" in tiered ? tiered.whole.body.toString("utf8") : batchText(tiered.answers);
    const status = "whole" in tiered ? tiered.whole.statusCode : 200;
    const merged = refusals === undefined ? undefined : partialBatchAnswer(status, text, refusals);
    if (merged !== undefined) sendJson(res, 200, merged, tierHeader);
    else if ("whole" in tiered) send(res, tiered.whole, "full");
    else sendJson(res, 200, text, tierHeader);
    done();
  });
}

/** A batch's answers by tier: the node's answer as it came, or the answers with some replaced. */
export type TieredBatch =
  | { readonly whole: WholeAnswer }
  | {
      readonly answers: BatchAnswer[];
      /** The calls the archive nodes answered. */
      readonly archived: readonly PassedCall[];
      /**
       * The calls the gateway answered itself: ARCHIVE_REQUIRED (a key without archive access), or the error
       * of archive nodes that could not serve them. Never kept.
       */
      readonly required: readonly PassedCall[];
      /**
       * The full node that answered a call (none for the archive nodes' answers and the gateway's own):
       * whether its answer may serve other callers, and how final it is, is that node's (kept-answer.ts).
       */
      readonly nodeOf: (call: PassedCall) => Upstream | undefined;
    };

/**
 * A batch with reads of state at a named block, read whole: it goes to a full node. Its calls by hash that
 * node did not know (or had no state for) are asked, as one batch, of another full node first, which may
 * have seen the block (by-hash.ts); the calls still refused as missing state are then sent, as one batch,
 * to the archive nodes once more, and their answers take the refusals' places (by id). For a key without
 * archive access each refusal becomes ARCHIVE_REQUIRED. The access line's tier says whether the archive
 * nodes answered any.
 */
export function fetchBatchByTier(
  call: UpstreamCall,
  tier: TierPlan,
  stateCalls: readonly PassedCall[],
  caller: CallerSide,
  requestId: string | undefined,
  note: TierFields,
  callback: (error: GatewayError | undefined, tiered?: TieredBatch) => void,
): void {
  fetchWhole({ ...call, tier: undefined }, caller, note, (error, answer) => {
    if (error !== undefined || answer === undefined) return callback(error);
    // a batch some of whose calls the cache answered with archive answers stays priced as such
    if (note.tier !== "archive") note.tier = "full";
    const answers = batchAnswers(answer);
    if (answers === undefined) return callback(undefined, { whole: answer });
    // each answer's full node: this one's, and the other's for those its answers replace
    const byNode = new Map<BatchAnswer, Upstream>(answers.map((a) => [a, answer.upstream]));
    const nodeOf = (c: PassedCall): Upstream | undefined => {
      const found = answerTo(answers, c);
      return found === undefined ? undefined : byNode.get(found);
    };
    const unknown = unknownTexts(tier, call);
    const byHash = call.group.members.length > 1 ? (call.reads?.byHashCalls ?? []) : [];
    const again = byHash.filter((c) => unknownIn(answerTo(answers, c)?.value, unknown));
    const archiveTheRest = (changed: boolean) =>
      refusedToArchive(
        call,
        tier,
        stateCalls,
        answers,
        changed ? undefined : answer,
        nodeOf,
        caller,
        requestId,
        note,
        callback,
      );
    if (again.length === 0) return archiveTheRest(false);
    call.group.answers.add("by_hash_again");
    const body = batchOf(withHeadReads(call, again));
    const other = { ...call, body, tier: undefined, exclude: answer.upstream, writer: undefined };
    fetchWhole(other, caller, note, (failed, second) => {
      const found = failed === undefined && second !== undefined ? batchAnswers(second) : undefined;
      for (const a of found ?? []) byNode.set(a, (second as WholeAnswer).upstream);
      let changed = false;
      for (const c of again) {
        const other = found === undefined ? undefined : answerTo(found, c);
        if (other === undefined || unknownIn(other.value, unknown)) continue;
        replaceAnswer(answers, c, other);
        changed = true;
      }
      if (changed && found !== undefined) takeHeadReads(call, answers, found);
      archiveTheRest(changed);
    });
  });
}

/**
 * The batch's calls a full node refused as missing state go to the archive nodes (or are ARCHIVE_REQUIRED);
 * with none, the answers as they are: `unchanged`, the full node's own answer as it came, when nothing
 * replaced any of them.
 */
function refusedToArchive(
  call: UpstreamCall,
  tier: TierPlan,
  stateCalls: readonly PassedCall[],
  answers: BatchAnswer[],
  unchanged: WholeAnswer | undefined,
  nodeOf: (call: PassedCall) => Upstream | undefined,
  caller: CallerSide,
  requestId: string | undefined,
  note: TierFields,
  callback: (error: GatewayError | undefined, tiered?: TieredBatch) => void,
): void {
  const refused = stateCalls.filter((c) => errorIn(answers, c, tier.missingState));
  if (refused.length === 0) {
    callback(
      undefined,
      unchanged !== undefined ? { whole: unchanged } : { answers, archived: [], required: [], nodeOf },
    );
    return;
  }
  const group = tier.archiveGroup;
  if (!tier.mayArchive) {
    call.group.answers.add("archive_required");
    const byHash = new Set(call.reads?.byHashCalls);
    note.requiredMethods = refused.map((c) => c.method);
    for (const c of refused) replaceAnswer(answers, c, answerOf(refusal(tier, c, byHash.has(c), requestId)));
    callback(undefined, { answers, archived: [], required: refused, nodeOf });
    return;
  }
  // the refused calls alone get the gateway's error, as the single read would: the rest are answered
  const failed = (error: GatewayError): void => {
    const code = error.code;
    if (!hasRpcNumber(code)) {
      callback(error);
      return;
    }
    note.requiredMethods = refused.map((c) => c.method);
    note.requiredCode = code;
    for (const c of refused)
      replaceAnswer(answers, c, answerOf(rpcErrorJson(code, c.id ?? "null", error.detail, requestId)));
    callback(undefined, { answers, archived: [], required: refused, nodeOf });
  };
  call.group.answers.add("archive_again");
  if (group === undefined) {
    failed(noArchiveNode(tier.archiveLabel));
    return;
  }
  const body = batchOf(refused);
  fetchWhole({ ...call, group, body, tier: undefined }, caller, note, (again, fromArchive) => {
    const archived = again === undefined && fromArchive !== undefined ? batchAnswers(fromArchive) : undefined;
    if (archived === undefined)
      return failed(archiveFailed(tier.archiveLabel, again ?? new GatewayError("UPSTREAM_BAD_RESPONSE")));
    const replaced: PassedCall[] = [];
    for (const c of refused) {
      const found = answerTo(archived, c);
      if (found === undefined) continue;
      replaceAnswer(answers, c, found);
      replaced.push(c);
    }
    for (const c of replaced) archivedCall(note, c.method);
    callback(undefined, { answers, archived: replaced, required: [], nodeOf });
  });
}

/** The errors by which a full node says it lacks a block named by hash: no such state, or no such block. */
function unknownTexts(tier: TierPlan, call: UpstreamCall): readonly string[] {
  const unknownBlock = call.reads?.unknownBlock ?? [];
  return unknownBlock.length === 0 ? tier.missingState : [...tier.missingState, ...unknownBlock];
}

/** Whether a call's answer in a batch is an error with one of `texts` in it. */
function errorIn(answers: readonly BatchAnswer[], call: PassedCall, texts: readonly string[]): boolean {
  const answer = answerTo(answers, call)?.value as { error?: unknown } | undefined;
  if (answer?.error === undefined || answer.error === null) return false;
  const text = JSON.stringify(answer.error);
  return texts.some((wanted) => text.includes(wanted));
}

/** A batch's call refused as ARCHIVE_REQUIRED, naming the request's id as every refusal does. */
function refusal(tier: TierPlan, call: PassedCall, byHash: boolean, requestId: string | undefined): string {
  const error = archiveRequired(tier, byHash);
  return rpcErrorJson("ARCHIVE_REQUIRED", call.id ?? "null", error.detail, requestId);
}

/**
 * A read that needs an archive node, where the archive label has no upstream: an HTTP caller's and a
 * WebSocket's (ws/archive-reads.ts) alike, written here once.
 */
export function noArchiveNode(archiveLabel: string): GatewayError {
  return new GatewayError("NO_UPSTREAM", {
    archiveLabel,
    reason: `this read needs an archive node, and ${archiveLabel} has no upstream`,
  });
}

/**
 * The archive nodes failed a read (none in rotation, none answered in time, a broken answer): the gateway's
 * error as it was, its reason naming the archive label, whose nodes it is about, not the full label's. An
 * HTTP caller's and a WebSocket's (ws/archive-reads.ts) alike.
 */
export function archiveFailed(archiveLabel: string, error: GatewayError): GatewayError {
  const reason = typeof error.detail?.reason === "string" ? error.detail.reason : error.message;
  return new GatewayError(
    error.code,
    {
      ...error.detail,
      archiveLabel,
      reason: `this read needs an archive node, and ${archiveLabel} could not serve it: ${reason}`,
    },
    error.headers === undefined ? undefined : { ...error.headers },
  );
}

function archiveRequired(tier: TierPlan, byHash: boolean): GatewayError {
  return new GatewayError("ARCHIVE_REQUIRED", archiveRequiredDetail(tier.archiveLabel, byHash));
}

/**
 * ARCHIVE_REQUIRED's members: the archive label, and what to do. A block named by hash that the full nodes
 * have no state at may be one older than they keep, or one that never was (a typo, another network's
 * hash, which nearcore answers as it answers a collected one): the reason says both.
 */
export function archiveRequiredDetail(
  archiveLabel: string,
  byHash = false,
): Readonly<Record<string, unknown>> {
  const what = byHash
    ? "the full nodes have no state at the block this read names by hash: it may be older than they keep, or not be a block of this network at all. If it is old"
    : "this read needs state that only archive nodes keep";
  return {
    archiveLabel,
    reason: `${what}: call ${archiveLabel} with a key that has archive access`,
  };
}

/**
 * Whether a node's answer is a JSON-RPC error with one of `texts` in its message, data or cause: it has no
 * such state, or no such block (nearcore puts the reason in `cause.name`, with a generic message).
 */
function errorNames(answer: WholeAnswer, texts: readonly string[]): boolean {
  let error: unknown;
  try {
    error = (JSON.parse(answer.body.toString("utf8")) as { error?: unknown }).error;
  } catch {
    return false;
  }
  if (error === undefined || error === null) return false;
  const text = JSON.stringify(error);
  return texts.some((wanted) => text.includes(wanted));
}

function send(res: ServerResponse, answer: WholeAnswer, tier: "full" | "archive"): void {
  if (res.headersSent) return;
  res.writeHead(
    answer.statusCode,
    withAnswerTag(res, answer.statusCode, [...answer.headers, TIER_HEADER, tier]),
  );
  res.end(answer.body);
}
