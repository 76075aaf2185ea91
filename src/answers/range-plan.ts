import type { BlockRangeLimits } from "../config/types.js";
import { GatewayError } from "../errors/table.js";
import { isHeightPastSafe, readHeight } from "../upstream/head.js";
import { isGenesisTag, isGiven, isOneOf, isTag, namedBlock } from "./block-params.js";
import type { RangeRead, ReadNeed } from "./read-need.js";

/** A range call that is split: its range, resolved to heights, and the widest sub-range. */
export interface RangeSplit {
  readonly read: RangeRead;
  readonly from: number;
  readonly to: number;
  readonly size: number;
  /**
   * The range's limits as BLOCK_RANGE_TOO_LARGE states them (`method`, `from`, `to`, `blocks`, `splitAbove`,
   * `refuseAbove`), for a merged answer past the answer size cap.
   */
  readonly limits: Readonly<Record<string, unknown>>;
  /**
   * A range whose end only the node can place: one that ends at a settled tag (registry
   * `block.settledTags`: EVM's `safe`, `finalized`), whose height only the node knows, or one whose numbered
   * end is above the label's served head, which the node caps at its own head. Its numbered sub-ranges end
   * below `from` (at the label's finalized height, or at the served head), and one more runs from there to
   * the end as the caller wrote it (`to`).
   */
  readonly tail?: { readonly from: number; readonly to: unknown };
}

/** How many calls a split range runs as. */
export function subRanges(split: RangeSplit): number {
  return Math.ceil((split.to - split.from + 1) / split.size) + (split.tail === undefined ? 0 : 1);
}

/** What the range calls of a message come to: the highest block they need, and the split, if one is. */
export interface RangePlan {
  readonly highestBlock: number;
  readonly split: RangeSplit | undefined;
}

/**
 * Checks each range call against its limits (the label's `blockRanges` for its method over the registry's
 * `reads.ranges`), with head tags and left-out bounds resolved against the label's served head: wider than
 * `refuseAbove` blocks it is refused, wider than `splitAbove` it is split, when it is the message's only
 * call; in a batch (or on a WebSocket) it is refused, since a batch's calls go to one node together. A range whose bounds
 * are hashes, or that needs the head before one is known, goes as sent: the node judges it. One in no form
 * a node reads alike is refused (`bound`).
 */
export function planRanges(
  need: ReadNeed,
  servedHead: number,
  limits: Readonly<Record<string, BlockRangeLimits>> | undefined,
  finalized = -1,
): RangePlan {
  let highestBlock = -1;
  let split: RangeSplit | undefined;
  for (const read of need.ranges) {
    const fromValue = read.filter[read.rule.from];
    // a node that reads a left-out (or null: serde's None) start as genesis scans the whole chain for it
    const from =
      (fromValue === undefined || fromValue === null) && read.rule.openFrom === "genesis"
        ? 0
        : bound(read, fromValue, servedHead, read.rule.from);
    const toValue = read.filter[read.rule.to];
    // a node that reads a left-out end as the start (registry `openTo`) compares that block alone
    const toStart = !isGiven(toValue) && read.rule.openTo === "from";
    // the finality tag names the label's finalized height, which the prober read
    const atFinalized = finalized >= 0 && isTag(read.block.finalizedTag, toValue);
    // another settled tag names a block at or below the head that only the node knows: the head bounds how
    // wide the range may be
    const settled =
      !atFinalized && read.block.settledTags !== undefined && isOneOf(read.block.settledTags, toValue);
    const named = toStart
      ? from
      : atFinalized
        ? finalized
        : settled
          ? servedHead < 0
            ? undefined
            : servedHead
          : bound(read, toValue, servedHead, read.rule.to);
    // a filter scans what is there and watches the rest
    const watches = read.rule.watches === true;
    const to = watches && named !== undefined && servedHead >= 0 ? Math.min(named, servedHead) : named;
    if (from === undefined || to === undefined || to < from) continue;
    // a numbered end above the served head names no block yet: a node scans up to its own head (anvil,
    // geth, Reth cap it there), so no node need reach it; the range's start, above the head, it must
    const aboveHead = !settled && !atFinalized && servedHead >= 0 && to > servedHead;
    const reach = aboveHead ? Math.max(servedHead, from) : to;
    if (!watches && reach > highestBlock) highestBlock = reach;
    const blocks = to - from + 1;
    const own = limits?.[read.call.method];
    const splitAbove = own?.splitAbove ?? read.rule.splitAbove;
    const refuseAbove = own?.refuseAbove ?? read.rule.refuseAbove;
    // a deployment may refuse below the registry's split limit
    if (blocks <= splitAbove && blocks <= refuseAbove) continue;
    // a settled tag's height is the node's: the range is named as the caller wrote it, at most this wide
    const detail = {
      method: read.call.method,
      from,
      to: settled ? toValue : to,
      blocks,
      splitAbove,
      refuseAbove,
    };
    if (blocks > refuseAbove) throw new GatewayError("BLOCK_RANGE_TOO_LARGE", detail);
    // bounds that are params of their own (a state comparison of two blocks): its answer is no list that
    // sub-ranges' answers make up, so it goes as sent within refuseAbove
    if (typeof read.rule.from === "number") continue;
    // what a node scans of a range past the head is up to its head: within the split limit, it goes as sent
    if (aboveHead && reach - from + 1 <= splitAbove) continue;
    if (watches) continue;
    // a paged call is the node's to page: split, its pages would no longer mean what the caller asked
    if (read.rule.pages?.some((member) => isGiven(read.filter[member]))) continue;
    // a notification wants no answer: merged from sub-ranges, it would get one; it goes as sent, within
    // refuseAbove, and the node answers it as it answers any notification
    if (read.call.id === undefined) continue;
    if (!need.single)
      throw new GatewayError("BLOCK_RANGE_TOO_LARGE", {
        ...detail,
        reason: `a range wider than ${splitAbove} blocks is split only when it is sent alone over HTTP, not in a batch nor over a WebSocket`,
      });
    const sized = { read, from, size: splitAbove, limits: detail };
    // numbered up to the served head, and the rest, from the head to the end as written, which the node caps
    if (aboveHead && typeof toValue !== "undefined")
      split = { ...sized, to: servedHead - 1, tail: { from: servedHead, to: toValue } };
    else if (!settled) split = { ...sized, to };
    // the node reads the tag: up to the finalized height the range is split, and the rest, from there to the
    // tag, is as wide as the label's finality lags its head (within refuseAbove, as the whole range counted
    // to the head is); with no finalized height known above its start, it goes as sent
    else if (finalized > from && typeof toValue === "string")
      split = { ...sized, to: finalized - 1, tail: { from: finalized, to: toValue } };
  }
  return { highestBlock, split };
}

/**
 * A range bound as a height: a head tag or a left-out bound is the served head (a left-out start that the
 * registry's `openFrom` says is genesis aside), a genesis tag block 0, a
 * number too large to read exactly the largest one that is (so that the range it bounds counts as wide as
 * it is, rather than going to a node that would read it as "to my head"), a JSON integer or decimal text the
 * number it names; a hash none; anything else is refused (INVALID_REQUEST).
 */
function bound(
  read: RangeRead,
  value: unknown,
  servedHead: number,
  member: string | number,
): number | undefined {
  if (isGenesisTag(read.block, value)) return 0;
  const named = namedBlock(read.block, value);
  if (named === "none") {
    if (isHeightPastSafe(value, read.block.encoding)) return Number.MAX_SAFE_INTEGER;
    // a number the registry's encoding does not write (a JSON number, decimal text) is still one to a node
    // that reads it (Erigon's and Besu's block numbers read decimal too): the range is as wide as it says
    const plain = plainHeight(value);
    if (plain !== undefined) return plain;
    // anything else a node may read its own way (Erigon reads the text "null" as the head): not as sent
    throw new GatewayError("INVALID_REQUEST", {
      reason: `${typeof member === "number" ? `param ${member}` : `"${member}"`} of ${read.call.method} is neither a block number nor a tag this network names`,
    });
  }
  if (named === "hash") return undefined;
  if (named === "head") return servedHead < 0 ? undefined : servedHead;
  return named;
}

/** A height written as a JSON integer or as decimal digits; a larger one than is exact as the largest. */
function plainHeight(value: unknown): number | undefined {
  const encoding = typeof value === "number" ? "integer" : "decimal-string";
  return isHeightPastSafe(value, encoding) ? Number.MAX_SAFE_INTEGER : readHeight(value, encoding);
}

/**
 * A filter's range as it was made (`reads.handles.make` with a `ranges` rule that `watches`): its start,
 * and its end, undefined where it is open (left out or the head tag: the node's head when the filter is
 * read). `method` is the call that made it, whose `refuseAbove` bounds it.
 */
export interface FilterSpan {
  readonly method: string;
  readonly from: number;
  readonly to: number | undefined;
}

/**
 * The range a filter's node scans when the filter's logs are asked (`reads.handles.scans`), as the range plan
 * read it when it was made; none for a start that is the head when the filter is read (a node scans from
 * its head then), or bounds by hash or in no form a node reads alike.
 */
export function filterSpan(read: RangeRead | undefined): FilterSpan | undefined {
  if (read?.rule.watches !== true) return undefined;
  const fromValue = read.filter[read.rule.from];
  const toValue = read.filter[read.rule.to];
  try {
    const from =
      (fromValue === undefined || fromValue === null) && read.rule.openFrom === "genesis"
        ? 0
        : bound(read, fromValue, -1, read.rule.from);
    if (from === undefined) return undefined;
    // a settled tag is at most the head, as the head tag is
    const open =
      toValue === undefined ||
      toValue === null ||
      namedBlock(read.block, toValue) === "head" ||
      (read.block.settledTags !== undefined && isOneOf(read.block.settledTags, toValue)) ||
      isTag(read.block.finalizedTag, toValue);
    const to = open ? undefined : bound(read, toValue, -1, read.rule.to);
    if (!open && to === undefined) return undefined;
    return { method: read.call.method, from, to };
  } catch {
    return undefined;
  }
}

/**
 * Refuses (BLOCK_RANGE_TOO_LARGE) a use of a filter that scans its range (`method`: eth_getFilterLogs) once
 * the range up to the served head is wider than the filter's `refuseAbove`: when it was made, its part past
 * the head counted as nothing, and the chain has moved on since.
 */
export function checkFilterSpan(
  span: FilterSpan,
  method: string,
  servedHead: number,
  rule: { readonly refuseAbove: number } | undefined,
  limits: Readonly<Record<string, BlockRangeLimits>> | undefined,
): void {
  if (rule === undefined || servedHead < 0) return;
  const to = span.to === undefined ? servedHead : Math.min(span.to, servedHead);
  const blocks = to - span.from + 1;
  const refuseAbove = limits?.[span.method]?.refuseAbove ?? rule.refuseAbove;
  if (blocks > refuseAbove)
    throw new GatewayError("BLOCK_RANGE_TOO_LARGE", { method, from: span.from, to, blocks, refuseAbove });
}
