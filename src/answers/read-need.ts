import type { PassedCall } from "../jsonrpc/check.js";
import type {
  BlockParamRule,
  HeadCall,
  HeadEncoding,
  RangeRule,
  ReadRules,
  UnknownBlockAnswer,
} from "../registry/types.js";
import { readHeight } from "../upstream/head.js";
import {
  blockParam,
  isGiven,
  isOneOf,
  isTag,
  NO_BLOCK_PARAM,
  namedBlock,
  paramAt,
  positional,
  tagOf,
} from "./block-params.js";

/**
 * What a message's reads need of the node that answers them (docs/upstreams.md, "Answers across nodes"):
 * whether one reads at the head, the highest block one names by number, and which answers say which block
 * they read. A batch goes to one node, so its calls share one need: every call in it sees the same head.
 */
export class ReadNeed {
  /** A call reads at the head: the node must have reached the head the label has served. */
  atHead = false;
  /** The highest block a call names by number; -1 when none does. */
  highestBlock = -1;
  /**
   * The last block a page of blocks reads (registry `pageEnds`); -1 when none does: a node must have reached
   * it, or the label's served head where the page runs past it, so that no read waits for a block no node has.
   */
  pageEnd = -1;
  /**
   * A call reads at the finalized tag (registry `block.finalizedTag`: `finalized`, `l1_accepted`, nearcore's
   * `final`): each node answers its own finalized block, and the one that named the highest goes first.
   */
  atFinalized = false;
  /**
   * The one call's answer is the node's head block's hash, with no height (registry `headHashes`): a hash
   * the label has not answered before is held while its node's head is read (src/answers/head-hash.ts).
   */
  headHash = false;
  /** Calls whose answers say which block they read: the label's served head learns from them. */
  readonly learn: HeightInAnswer[] = [];
  /** Calls that take a block range (range-plan.ts): each is checked against its limits before it goes. */
  readonly ranges: RangeRead[] = [];
  /** The message is one call: a range wider than its split limit may then be split. */
  single = false;
  /** The block a read of state names by number (registry `reads.archive.state`); -1 when none does. */
  stateBlock = -1;
  /** A read of state names its block by hash: only the node can say whether it still has that state. */
  stateByHash = false;
  /**
   * A read of state names no block the rules read by number or hash (a block of a chain the head does not
   * count, `reads.when`): it may be old, and only the node can say whether it still has that state; it may
   * be new, so it needs the served head as well (`atHead`).
   */
  stateUnnamed = false;
  /**
   * A read of history a full node may have dropped though it names the block (registry `archive.history`):
   * the lowest block such a read names by number, or -1 for one that names none (a transaction by its hash).
   * Only the node can say whether it still has it; its refusal sends the read to the archive nodes.
   */
  historyFrom: number | undefined = undefined;
  /** A read names a block by hash: a node that does not know the block yet answers null for it. */
  byHash = false;
  /** The calls that name a block by hash: in a batch, those a node answers null are asked of another. */
  readonly byHashCalls: PassedCall[] = [];
  /**
   * In a batch, the calls that read at the head: when its reads by hash are found on another node, these go
   * there with them, so that every call of the batch sees that node's head (by-hash.ts). Made for batches
   * alone, where one has such a call.
   */
  atHeadCalls: PassedCall[] | undefined = undefined;

  /** A batch's call reads at the head. */
  readsAtHead(call: PassedCall): void {
    if (this.atHeadCalls === undefined) this.atHeadCalls = [call];
    else this.atHeadCalls.push(call);
  }
  /** Error texts that, as null does, say a node does not know the block named by hash (`reads.unknownBlock`). */
  unknownBlock: readonly string[] = [];
  /** A REST read's answers that say so (`reads.unknownBlockAnswers`: Octez's 404, Thor's null). */
  unknownAnswers: readonly UnknownBlockAnswer[] = [];
  /** A call makes state on its node, named by its answer's result (`reads.handles.make`: a filter). */
  makesHandle = false;
  /** In a batch: the ids of the calls that make such state, whose answers name it. */
  readonly handleMakers: string[] = [];
  /** In a batch: the ranges of the calls that make filters (a `ranges` rule that `watches`), by their ids. */
  readonly makerRanges = new Map<string, RangeRead>();
  /** The name of the state a call uses (`reads.handles.use`), which the node that made it alone has. */
  handle: string | undefined = undefined;
  /** Every such name the message's calls use: each must be one its caller made (node-states.ts `madeByAnother`). */
  readonly handles: string[] = [];
  /** The uses that scan their filter's whole range (`reads.handles.scans`), by the filter's name. */
  readonly scans: { readonly name: string; readonly method: string }[] = [];
  /** The calls that read state at a named block: in a batch, those a full node refuses go to archive nodes. */
  readonly stateCalls: PassedCall[] = [];
}

/** A call that takes a block range, as the caller sent it. */
export interface RangeRead {
  readonly call: PassedCall;
  readonly rule: RangeRule;
  readonly block: BlockParamRule;
  /** The call's params, with the range's object at `rule.param`. */
  readonly params: readonly unknown[];
  readonly filter: Readonly<Record<string, unknown>>;
}

/** Where one call's answer holds a height: the call's id as sent, and the member path in the answer. */
export interface HeightInAnswer {
  /** The call's id as its source text, or undefined for a single call (its answer is the only one). */
  readonly id: string | undefined;
  readonly path: readonly string[];
  readonly encoding: HeadEncoding;
  /** The answer is the node's head itself (the head call), not a block that the node has. */
  readonly isHead: boolean;
  /**
   * The answer is the node's finalized block (a read at the finalized tag): the node's finalized height
   * rises to it, so the next such read goes to a node at least that final (label-finality.ts `mostFinalized`).
   */
  readonly isFinal?: boolean;
  /** The answer's member, and its values, that say the height is of a block still being built (`heightUnless`). */
  readonly unless?: { readonly path: readonly string[]; readonly values: readonly string[] };
}

const RESULT = ["result"];

/** The head call alone needs the same every time: one object per head call, not one per request. */
const HEAD_CALL_NEEDS = new WeakMap<HeadCall, ReadNeed>();

/**
 * The need of the mount's head call, sent as a caller's call: it reads at the head, and its answer (at the
 * head call's `field`) is the node's head. A REST head call (algod's `GET /v2/status`) too.
 */
export function headCallNeed(head: HeadCall): ReadNeed {
  let need = HEAD_CALL_NEEDS.get(head);
  if (need === undefined) {
    need = new ReadNeed();
    need.atHead = true;
    need.learn.push({ id: undefined, path: head.field, encoding: head.encoding, isHead: true });
    HEAD_CALL_NEEDS.set(head, need);
  }
  return need;
}

/**
 * The need of the calls that go upstream, or undefined when none of them reads by block: those go as they
 * always did, and their answers are relayed as they arrive. `single` says the message is one call.
 */
export function readNeed(
  rules: ReadRules | undefined,
  head: HeadCall,
  calls: readonly PassedCall[],
  single: boolean,
): ReadNeed | undefined {
  if (single && isHeadCall(calls[0] as PassedCall, head)) return headCallNeed(head);
  let need: ReadNeed | undefined;
  for (const call of calls) {
    const id = single ? undefined : call.id;
    if (isHeadCall(call, head)) {
      need ??= new ReadNeed();
      need.atHead = true;
      if (!single) need.readsAtHead(call);
      need.learn.push({ id, path: head.field, encoding: head.encoding, isHead: true });
      continue;
    }
    if (rules?.archive?.history?.includes(call.method) === true) {
      const from = historyFrom(rules, call);
      if (from !== undefined) {
        need ??= new ReadNeed();
        need.historyFrom = Math.min(need.historyFrom ?? from, from);
        need.stateCalls.push(call);
      }
    }
    if (rules?.atHead?.includes(call.method) === true && !readsAtItsBlockOnly(rules, call)) {
      need ??= new ReadNeed();
      need.atHead = true;
      if (!single) need.readsAtHead(call);
      if (single && rules.headHashes?.includes(call.method) === true) need.headHash = true;
      const final = rules.atFinalized?.includes(call.method) === true;
      if (final) need.atFinalized = true;
      // a mined transaction's block: a newer one than the label served raises its head
      learnHeightIn(need, rules, call, id, final);
      // one that reads from the block it names through the head (reads.throughHead: a page from its first
      // ledger, whose answer names the node's latest): a node must have reached that block as well
      const value = blockParam(rules, call);
      const named = value === NO_BLOCK_PARAM ? "none" : namedBlock(rules.block, value);
      if (typeof named === "number" && named > need.highestBlock) need.highestBlock = named;
      continue;
    }
    const handles = rules?.handles;
    if (rules !== undefined && handles !== undefined) {
      if (handles.make.includes(call.method)) {
        need ??= new ReadNeed();
        need.makesHandle = true;
        if (!single && call.id !== undefined) need.handleMakers.push(call.id);
        // a filter's range is checked as a log query's is (registry `ranges`, `watches`)
        if (rules.ranges?.[call.method] === undefined) continue;
      }
      const at = handles.use[call.method];
      if (at !== undefined) {
        const name = paramAt(rules, call.method, (call.call.value as { params?: unknown }).params, at);
        need ??= new ReadNeed();
        if (typeof name === "string") {
          need.handle = name;
          need.handles.push(name);
          if (handles.scans?.includes(call.method) === true) need.scans.push({ name, method: call.method });
        }
        continue;
      }
    }
    const range = rules?.ranges?.[call.method];
    if (rules !== undefined && range !== undefined) {
      const read = rangeRead(rules, call, range, rules.block);
      if (read !== undefined) {
        need ??= new ReadNeed();
        need.ranges.push(read);
        // an answer that names the node's head beside the range (stellar-rpc's latestLedger)
        learnHeightIn(need, rules, call, id, false);
        if (range.watches === true && !single && call.id !== undefined) need.makerRanges.set(call.id, read);
        // a bound named by its block's hash (a `{"block_hash": …}` bound): a node that has not seen that block
        // says so, and another may have it
        if (range.watches !== true && boundByHash(rules, read)) {
          need.byHash = true;
          need.byHashCalls.push(call);
          if (rules.unknownBlock !== undefined) need.unknownBlock = rules.unknownBlock;
        }
      } else if (range.watches !== true && rangeByHash(rules, call, range)) {
        // one block by its hash (eth_getLogs's `blockHash`): a node that has not seen it yet says so
        need ??= new ReadNeed();
        need.byHash = true;
        need.byHashCalls.push(call);
        if (rules.unknownBlock !== undefined) need.unknownBlock = rules.unknownBlock;
      }
      // a range call that reads state at a block it names (`at`: the state of two blocks compared) is
      // routed by that block as well, an old one's to an archive node
      if (rules.at?.[call.method] === undefined) continue;
    }
    if (rules === undefined) continue;
    const value = blockParam(rules, call);
    const named = value === NO_BLOCK_PARAM ? "none" : namedBlock(rules.block, value);
    if (named === "none") {
      // no height to route it by, nor to tell that it is old: a full node says whether it has that state.
      // Nor to tell that it is not new (toncenter's lookupBlock by lt or time, a shard block's seqno): a
      // node behind has not made the block the caller saw from the node ahead, so it needs the served head
      if (rules.archive?.state.includes(call.method)) {
        need ??= new ReadNeed();
        need.atHead = true;
        need.stateUnnamed = true;
        need.stateCalls.push(call);
      }
      continue;
    }
    need ??= new ReadNeed();
    if (named === "hash") {
      need.byHash = true;
      need.byHashCalls.push(call);
      if (rules.unknownBlock !== undefined) need.unknownBlock = rules.unknownBlock;
      if (rules.archive?.state.includes(call.method)) {
        need.stateByHash = true;
        need.stateCalls.push(call);
      }
    } else if (named === "head") {
      need.atHead = true;
      if (!single) need.readsAtHead(call);
      const tag = tagOf(rules.block, value);
      const final = isTag(rules.block.finalizedTag, tag);
      if (final) need.atFinalized = true;
      // a block still being built (a live tag: pending, pre_confirmed) is numbered past the node's head,
      // a block no node has made yet: the served head does not learn it
      if (rules.cache?.liveTags === undefined || !isOneOf(rules.cache.liveTags, tag))
        learnHeightIn(need, rules, call, id, final);
    } else {
      if (named > need.highestBlock) need.highestBlock = named;
      // a block a node that prunes has deleted: another node of the label may still hold it
      if (rules.prunedBlock !== undefined) {
        need.byHash = true;
        need.byHashCalls.push(call);
        need.unknownBlock = [...new Set([...need.unknownBlock, ...rules.prunedBlock])];
      }
      if (rules.archive?.state.includes(call.method)) {
        need.stateBlock = named;
        need.stateCalls.push(call);
      }
    }
  }
  if (need !== undefined) need.single = single;
  return need;
}

/**
 * Whether a call `reads.atHead` lists names a block where `reads.at` places one (an account read at an
 * optional earlier block): it reads at that block as any `at` call does, an old one's state an archive
 * node's; left out, it reads at the head. One that reads from that block through the head
 * (`reads.throughHead`) needs both.
 */
function readsAtItsBlockOnly(rules: ReadRules, call: PassedCall): boolean {
  if (rules.at?.[call.method] === undefined || rules.throughHead?.includes(call.method) === true)
    return false;
  const value = blockParam(rules, call);
  if (value === NO_BLOCK_PARAM) return false;
  const named = namedBlock(rules.block, value);
  return named === "hash" || typeof named === "number";
}

/** Where a call's answer says the block it read (registry `heightIn`): the label's served head learns it. */
function learnHeightIn(
  need: ReadNeed,
  rules: ReadRules,
  call: PassedCall,
  id: string | undefined,
  isFinal: boolean,
): void {
  const path = rules.heightIn?.[call.method];
  if (path === undefined) return;
  const unless = rules.heightUnless?.[call.method];
  const [member, values] = unless === undefined ? [] : (Object.entries(unless)[0] ?? []);
  need.learn.push({
    id,
    path: [...RESULT, ...path],
    encoding: rules.block.encoding,
    isHead: false,
    isFinal,
    ...(member === undefined || values === undefined
      ? {}
      : { unless: { path: [...RESULT, member], values } }),
  });
}

/** A range call's range object, or undefined when it names no range (`eth_getLogs` by `blockHash`). */
function rangeRead(
  rules: ReadRules,
  call: PassedCall,
  rule: RangeRule,
  block: BlockParamRule,
): RangeRead | undefined {
  const params = (call.call.value as { params?: unknown }).params;
  // bounds that are params of their own: the params, placed by their names when sent so, are the range
  if (typeof rule.from === "number") {
    const list = positional(rules, call.method, params);
    return { call, rule, block, params: list, filter: list as unknown as Record<string, unknown> };
  }
  const filter = rule.param === "params" ? params : paramAt(rules, call.method, params, rule.param);
  if (typeof filter !== "object" || filter === null || Array.isArray(filter)) return undefined;
  const members = filter as Record<string, unknown>;
  // a null hash is no hash: geth's filter and anvil read the range beside it; a filter that takes no hash
  // is its range whatever else it holds (a node may pass over a member it does not know)
  if (rule.hash !== undefined && isGiven(members[rule.hash])) return undefined;
  return { call, rule, block, params: positional(rules, call.method, params), filter: members };
}

/**
 * The block a history read names by number (a range's start), -1 for one that names no block (a trace of a
 * transaction by its hash), or undefined for one at the head or by block hash, which the read's other rules
 * serve (a head tag reads what every node has; an unknown hash is asked of another node).
 */
function historyFrom(rules: ReadRules, call: PassedCall): number | undefined {
  const range = rules.ranges?.[call.method];
  if (range !== undefined) {
    const read = rangeRead(rules, call, range, rules.block);
    if (read === undefined) return undefined;
    // a left-out start that the node reads as genesis (registry `openFrom`) is block 0, as the range plan reads it
    if (range.openFrom === "genesis" && !isGiven(read.filter[range.from])) return 0;
    const value = read.filter[range.from];
    const from = namedBlock(rules.block, value);
    if (typeof from === "number") return from;
    // decimal text names the height it says to a node that reads it (Erigon, Besu), as the range plan counts it
    return from === "none" ? readHeight(value, "decimal-string") : undefined;
  }
  const value = blockParam(rules, call);
  if (value === NO_BLOCK_PARAM) return -1;
  const named = namedBlock(rules.block, value);
  return typeof named === "number" ? named : undefined;
}

/** Whether one of a range's bounds names its block by hash. */
function boundByHash(rules: ReadRules, read: RangeRead): boolean {
  return (
    namedBlock(rules.block, read.filter[read.rule.from]) === "hash" ||
    namedBlock(rules.block, read.filter[read.rule.to]) === "hash"
  );
}

/** Whether a range call names its one block by hash instead of a range (the range rule's `hash`). */
function rangeByHash(rules: ReadRules, call: PassedCall, rule: RangeRule): boolean {
  const member = rule.hash;
  if (member === undefined) return false;
  const params = (call.call.value as { params?: unknown }).params;
  const filter = rule.param === "params" ? params : paramAt(rules, call.method, params, rule.param);
  return (
    typeof filter === "object" && filter !== null && isGiven((filter as Record<string, unknown>)[member])
  );
}

/**
 * Whether a call is the interface's head call as the prober sends it: its method, with no params or the
 * head call's own (`chain_getHeader` with a block hash reads that block, not the head).
 */
export function isHeadCall(call: PassedCall, head: HeadCall): boolean {
  if (head.kind !== "jsonrpc" || call.method !== head.method) return false;
  const params = (call.call.value as { params?: unknown }).params;
  if (params === undefined || params === null) return true;
  if (!Array.isArray(params)) return JSON.stringify(params) === JSON.stringify(head.params ?? {});
  const own = Array.isArray(head.params) ? head.params : [];
  return params.length === own.length && params.every((value, i) => value === own[i]);
}
