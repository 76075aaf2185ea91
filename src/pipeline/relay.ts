import type { ServerResponse } from "node:http";
import { relayByTier, type TierFields } from "../answers/archive.js";
import { relayByHash } from "../answers/by-hash.js";
import { learnHeights, whenShared } from "../answers/examined.js";
import { relayHeadHash } from "../answers/head-hash.js";
import { relaySplit, type SplitFields } from "../answers/range-split.js";
import { relayCachedBatch } from "../cache/batch-cached.js";
import { type CacheFields, relayCached } from "../cache/relay-cached.js";
import { sendJson } from "../errors/respond.js";
import { type BatchLayout, partialBatchAnswer } from "../jsonrpc/merge.js";
import { endsBy } from "../upstream/caller-end.js";
import { fetchWhole, type RelayDone, relayAnswer, type UpstreamCall } from "../upstream/policy.js";

/** Where a relay notes what it did (the access line's fields): each way of relaying notes its own. */
export type RelayFields = TierFields & SplitFields & CacheFields;

/**
 * 7. The answer, by the way stage 6 planned the call: a batch the cache may answer in part, with its
 * refusals if any; any other partial batch's read whole (by tier, if it reads old state; by hash, if it
 * reads a block by hash) and merged with its refusals; a read the cache may answer, from it or one node
 * call shared; a range too wide for one node, split; a read of old state, by tier; a read by hash, asked
 * again where a node did not know the block; and any other streamed through as it arrives
 * (upstream/policy.ts).
 */
export function relay(
  call: UpstreamCall,
  refusals: BatchLayout | undefined,
  res: ServerResponse,
  note: RelayFields,
  done: RelayDone,
): void {
  // what an upstream call's completion throws ends this request at its error boundary (INTERNAL, logged)
  endsBy(res, done);
  if (call.cacheBatch !== undefined && call.group.cache !== undefined)
    relayCachedBatch(call, call.cacheBatch, call.group.cache, res, note, done, refusals);
  // a partial batch with reads of old state goes by tier too, its refusals merged in
  else if (refusals !== undefined && call.tier?.batch !== undefined)
    relayByTier(call, call.tier, res, note, done, refusals);
  // and one with reads by hash is asked again where its node did not know the block, its refusals merged in
  else if (refusals !== undefined && call.byHash) relayByHash(call, res, note, done, refusals);
  else if (refusals !== undefined) relayMerged(call, refusals, res, note, done);
  // a new head block's hash, held until the label has served that head (a prober reads it)
  else if (
    call.reads?.headHash === true &&
    call.group.readHead !== undefined &&
    call.group.members.length > 1
  )
    relayHeadHash(call, res, note, done);
  else if (call.cache !== undefined && call.group.cache !== undefined)
    relayCached(call, call.cache, call.group.cache, res, note, done);
  else if (call.split !== undefined) relaySplit(call, call.split, res, note, done);
  else if (call.tier !== undefined) relayByTier(call, call.tier, res, note, done);
  else if (call.byHash) relayByHash(call, res, note, done);
  else relayAnswer(call, res, note, done);
}

/** 7, for a partial batch: the node answers the calls that passed, and the refusals take their places in its array. */
function relayMerged(
  call: UpstreamCall,
  refusals: BatchLayout,
  res: ServerResponse,
  note: RelayFields,
  done: RelayDone,
): void {
  fetchWhole(call, res, note, (error, answer) => {
    if (error !== undefined || answer === undefined) return done(error);
    // Called back from the upstream's handler: what this throws must end this request, not reach undici.
    try {
      const text = answer.body.toString("utf8");
      if (answer.statusCode === 200) learnHeights(call, answer.upstream, text);
      const merged = partialBatchAnswer(answer.statusCode, text, refusals);
      whenShared(
        call.group,
        () => {
          sendJson(res, merged === undefined ? answer.statusCode : 200, merged ?? text.trim());
          done();
        },
        done,
      );
    } catch (failure) {
      done(failure);
    }
  });
}
