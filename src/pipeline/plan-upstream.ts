import { archiveRequiredDetail, type TierPlan } from "../answers/archive.js";
import { checkFilterSpan, planRanges, type RangePlan, subRanges } from "../answers/range-plan.js";
import { isHeadCall, type ReadNeed, readNeed } from "../answers/read-need.js";
import type { BatchRead } from "../cache/batch-cached.js";
import { type CacheRead, onOwnNode } from "../cache/cache-read.js";
import type { GatewayConfig } from "../config/types.js";
import { GatewayError } from "../errors/table.js";
import type { Outgoing } from "../families/family.js";
import type { CallRefusal, PassedCall } from "../jsonrpc/check.js";
import { idKey } from "../jsonrpc/id-key.js";
import { archiveUnits, callsUnits } from "../plans/compute-units.js";
import { reachesArchive } from "../plans/plan-terms.js";
import type { ArchiveRule } from "../registry/types.js";
import type { UpstreamGroup } from "../upstream/group.js";
import type { UpstreamCall } from "../upstream/policy.js";
import type { Upstream, UpstreamTable } from "../upstream/upstreams.js";
import type { Mounted } from "./stages.js";

/**
 * Stage 6's planning (pipeline/stages.ts `planUpstream`): from a message the earlier stages passed, the
 * upstream call the relay makes. Its upstreams, the head or block a node must have reached, a range's split,
 * the archive tier, and what the answer cache may answer it with; and, for stage 5, what that plan will cost.
 */
export class UpstreamPlanner {
  readonly #config: GatewayConfig;
  readonly #upstreams: UpstreamTable;

  constructor(config: GatewayConfig, upstreams: UpstreamTable) {
    this.#config = config;
    this.#upstreams = upstreams;
  }

  /**
   * 5, before the charge: what a message will cost as stage 6 will plan it, so that its rate and quota hold
   * what it costs, not its calls' registry price alone. A range split into sub-ranges costs a call for each,
   * and a read the archive tier answers at once (every call on an archive label) the archive factor
   * (docs/compute-units.md). A read a full
   * node refuses and the archive tier then answers is priced at settlement: no one can tell before (its
   * quota hold takes the archive's price: `quotaUnits`).
   */
  plannedUnits(mounted: Mounted, outgoing: Outgoing | undefined, units: number): number {
    const reads = outgoing?.reads;
    // every call on an archive label is an archive node's, at its factor from the start
    const archived = mounted.admitted.endpoint.nodeClass === "archive";
    // most calls: no range, and no state at a numbered block (one named by hash is never sent to archive at once)
    if (reads === undefined || units <= 0 || (reads.ranges.length === 0 && reads.stateBlock < 0))
      return archived ? archiveUnits(units, mounted.mount.policy.computeUnits) : units;
    const group = this.#upstreams.group(mounted.admitted.endpoint.label, mounted.mount.path);
    if (group === undefined) return archived ? archiveUnits(units, mounted.mount.policy.computeUnits) : units;
    let planned = units;
    const split = reads.ranges.length === 0 ? undefined : this.#planRanges(reads, group).split;
    if (split !== undefined) planned *= subRanges(split);
    if (archived) return archiveUnits(planned, mounted.mount.policy.computeUnits);
    const tier = this.#tierPlan(mounted, reads, group);
    if (tier?.direct === true && tier.mayArchive)
      planned = archiveUnits(planned, mounted.mount.policy.computeUnits);
    return planned;
  }

  /**
   * 5, the quota: what a message's hold takes of it, `planned` as `plannedUnits` priced it, and more for a
   * read of state at a numbered block (or of old history) that a full node may refuse and the archive tier
   * then answer: that read (a batch's such calls) at the archive price, settled down to what it cost once
   * answered. Held at the full price, concurrent such reads could each pass the quota by the surcharge.
   */
  quotaUnits(mounted: Mounted, outgoing: Outgoing | undefined, planned: number): number {
    const reads = outgoing?.reads;
    const tier = reads === undefined || planned <= 0 ? undefined : this.#archiveHeld(mounted, reads);
    // a direct read is priced at the archive's already
    return tier === undefined || tier.direct ? planned : planned + this.#surcharge(mounted, tier, planned);
  }

  /**
   * The same for a WebSocket message's `calls` (`single`: not a batch): its reads go to its connection's
   * node first, and to the archive nodes only once that node said it has no such state
   * (ws/archive-reads.ts), so none was priced at the archive's before.
   */
  socketQuotaUnits(mounted: Mounted, calls: readonly PassedCall[], single: boolean, planned: number): number {
    if (planned <= 0 || calls.length === 0) return planned;
    const reads = readNeed(mounted.mount.policy.jsonrpc?.reads, mounted.mount.head, calls, single);
    const tier = reads === undefined ? undefined : this.#archiveHeld(mounted, reads);
    return tier === undefined ? planned : planned + this.#surcharge(mounted, tier, planned);
  }

  /**
   * The archive tier a read of state at a numbered block may reach, for a caller that may reach it; or a
   * read of history older than a full node keeps (registry `archive.history`: a log range, a block), which
   * goes there once a full node past EIP-4444 refuses it, so is held at the archive's price as well.
   */
  #archiveHeld(mounted: Mounted, reads: ReadNeed): TierPlan | undefined {
    const history = reads.historyFrom !== undefined;
    if (reads.stateBlock < 0 && !reads.stateByHash && !reads.stateUnnamed && !history) return undefined;
    const group = this.#upstreams.group(mounted.admitted.endpoint.label, mounted.mount.path);
    const tier = group === undefined ? undefined : this.#tierPlan(mounted, reads, group);
    // a key without archive access is refused there, at no price
    return tier?.mayArchive === true ? tier : undefined;
  }

  /** What the archive's price adds to `planned`: for a batch, to its calls the archive nodes may answer. */
  #surcharge(mounted: Mounted, tier: TierPlan, planned: number): number {
    const rules = mounted.mount.policy.computeUnits;
    const tiered =
      tier.batch === undefined
        ? planned
        : callsUnits(
            rules,
            tier.batch.map((call) => call.method),
            mounted.admitted.endpoint,
          );
    return archiveUnits(tiered, rules) - tiered;
  }

  /**
   * 6, before the plan: where the filters a call names are, when only another instance or worker saw them
   * made (node-states.ts `recall`); a promise only when it must ask.
   */
  recallHandles(mounted: Mounted, outgoing: Outgoing): Promise<void> | undefined {
    const names = outgoing.reads?.handles;
    if (names === undefined || names.length === 0) return undefined;
    const group = this.#upstreams.group(mounted.admitted.endpoint.label, mounted.mount.path);
    return group?.states.recall(mounted.admitted.stateOwner, names);
  }

  /**
   * 6. The upstream call: the mount's upstreams, the caller's path and query, the answer's size cap, and the
   * head a node must have reached to take it (src/answers/).
   */
  call(mounted: Mounted, outgoing: Outgoing): UpstreamCall {
    const { target } = mounted.admitted;
    const group = this.group(mounted);
    const { reads } = outgoing;
    if (reads !== undefined && madeByAnother(reads, group, mounted))
      throw new GatewayError("FILTER_NOT_FOUND");
    // a batch's were judged call by call (callRefusal)
    if (reads?.single === true) this.#checkScans(reads, group, mounted);
    const tier = reads === undefined ? undefined : this.#tierPlan(mounted, reads, group);
    const ranges =
      reads === undefined || reads.ranges.length === 0 ? undefined : this.#planRanges(reads, group);
    const clientId = mounted.admitted.clientId;
    const wroteTo = group.writers.nodeOf(clientId);
    // where the caller's filters are, for a new one; else where its last write went, whose mempool has it;
    // a read at the finalized tag (or in a finalized view by number, a page of blocks there), the node
    // that named the highest finalized block
    const preferred =
      (reads?.makesHandle === true ? group.states.ownerNode(mounted.admitted.stateOwner) : undefined) ??
      wroteTo ??
      (reads?.atFinalized === true
        ? group.finality.mostFinalized(reads.highestBlock < 0 && reads.pageEnd < 0)
        : undefined);
    // sent first to the node that took the caller's write, where another call may go to another node:
    // its cached reads share no call in flight (a label with one node sends every call to it)
    const ownNode = wroteTo !== undefined && preferred === wroteTo && group.members.length > 1;
    return {
      group,
      method: outgoing.method,
      path: outgoing.path ?? target.path,
      query: outgoing.query ?? target.query,
      // the node's logs can name the caller's request too, and its traces join the caller's
      headers: mounted.admitted.nodeHeaders(outgoing.headers),
      trace: typeof mounted.admitted.trace === "object" ? mounted.admitted.trace : undefined,
      body: outgoing.body,
      stream: outgoing.stream,
      heldMs: outgoing.heldMs ?? 0,
      write: outgoing.write,
      writeIds: outgoing.writeIds,
      nodeErrors: mounted.mount.policy.nodeErrors,
      refusedWrite: mounted.mount.policy.refusedWrite,
      limits: this.#config.limits.upstream,
      // A stream stays open while the node pushes: it has no size cap, as it has no end.
      maxBytes: outgoing.stream ? Number.POSITIVE_INFINITY : this.#config.limits.upstream.maxResponseBytes,
      // A read at the head needs the head the label served; one that names a block, that block. A label
      // with one node has nowhere else to send a read that names a block, and the caller most often
      // learned of that block from the node itself (a newHeads notification its head record has not
      // seen): it goes at once, and only a read at the head waits for the node (a head another instance
      // served, through Redis).
      atLeast:
        reads === undefined
          ? -1
          : group.members.length === 1
            ? reads.atHead
              ? group.served.height
              : -1
            : Math.max(
                reads.atHead ? group.served.height : -1,
                reads.highestBlock,
                ranges?.highestBlock ?? -1,
                Math.min(reads.pageEnd, group.served.height),
              ),
      reads,
      split: ranges?.split,
      tier,
      // a read by hash that one node answers null may find the block on another
      byHash: tier === undefined && reads !== undefined && reads.byHash && group.members.length > 1,
      cache:
        ranges?.split === undefined
          ? onOwnNode(this.#cacheRead(mounted, group, outgoing), ownNode)
          : undefined,
      cacheBatch:
        // a batch's reads of old state go by tier whether the cache answers some of its calls or none
        (tier === undefined || tier.batch !== undefined) &&
        ranges?.split === undefined &&
        !(reads?.byHash === true && group.members.length > 1) &&
        // a batch that makes or uses a filter goes whole to its node, and is read for the names it makes
        reads?.makesHandle !== true &&
        reads?.handle === undefined
          ? this.#cacheBatch(mounted, group, outgoing, ownNode)
          : undefined,
      // a filter's poll goes to the node that made the filter, which alone has it; a new filter where the
      // caller's others are, if that node takes it
      pinned:
        reads?.handle === undefined
          ? undefined
          : pinnedNode(reads.handle, group, mounted.admitted.stateOwner),
      preferred,
      handleOwner: reads?.makesHandle === true ? mounted.admitted.stateOwner : undefined,
      writer: outgoing.write ? clientId : undefined,
      exclude: undefined,
    };
  }

  /** 6, for a single call on a label whose cache is on: what the cache may answer it with (src/cache/). */
  #cacheRead(mounted: Mounted, group: UpstreamGroup, outgoing: Outgoing): CacheRead | undefined {
    const cache = group.cache;
    if (outgoing.restCache !== undefined && cache !== undefined)
      return cache.takes(outgoing.restCache, mounted.admitted);
    const call = outgoing.single;
    const reads = mounted.mount.policy.jsonrpc?.reads;
    if (call === undefined || cache === undefined || reads === undefined || outgoing.write) return undefined;
    return cache.readOf(reads, call, isHeadCall(call, mounted.mount.head), mounted.admitted);
  }

  /**
   * 6, for a batch on a label whose cache is on: each call with what the cache may answer it with, or none
   * when no call may be, when two calls share an id (their answers could not be told apart), or when one
   * is a notification (no id: no answer of its own to keep or give).
   */
  #cacheBatch(
    mounted: Mounted,
    group: UpstreamGroup,
    outgoing: Outgoing,
    ownNode: boolean,
  ): readonly BatchRead[] | undefined {
    const calls = outgoing.batch;
    const reads = mounted.mount.policy.jsonrpc?.reads;
    const cache = group.cache;
    if (calls === undefined || cache === undefined || reads === undefined || outgoing.write) return undefined;
    const ids = new Set<string>();
    let any = false;
    const batch = calls.map((call) => {
      // by value: ids written differently ("a", "\u0061") are still one id in the node's answers
      if (call.id !== undefined) ids.add(idKey(call.id));
      const kept = onOwnNode(
        cache.readOf(reads, call, isHeadCall(call, mounted.mount.head), mounted.admitted),
        ownNode,
      );
      if (kept !== undefined) any = true;
      return { call, read: kept };
    });
    return any && ids.size === calls.length ? batch : undefined;
  }

  /**
   * 4, for a call in a batch or on a WebSocket (whose calls go to one node together), refused alone while
   * the batch's or the connection's other calls go on: a range call that cannot be split, wider than the
   * interface's split limit (BLOCK_RANGE_TOO_LARGE), or with a bound no node reads alike (INVALID_REQUEST); a use of another caller's filter (FILTER_NOT_FOUND); a
   * read of state older than a full node keeps by a key without archive access (ARCHIVE_REQUIRED, as the
   * single read over HTTP is: a full node's answer to it is its own pruned-state error, or worse).
   */
  callRefusal(mounted: Mounted, call: PassedCall): CallRefusal | undefined {
    const rules = mounted.mount.policy.jsonrpc?.reads;
    if (rules === undefined) return undefined;
    const deep = this.#mayBeTooOld(mounted, call);
    if (!deep && rules.ranges?.[call.method] === undefined && rules.handles?.use[call.method] === undefined)
      return undefined;
    const group = this.#upstreams.group(mounted.admitted.endpoint.label, mounted.mount.path);
    const need = readNeed(rules, mounted.mount.head, [call], false);
    if (group === undefined || need === undefined) return undefined;
    if (madeByAnother(need, group, mounted)) return { code: "FILTER_NOT_FOUND", detail: {} };
    try {
      this.#checkScans(need, group, mounted);
    } catch (error) {
      if (error instanceof GatewayError && error.code === "BLOCK_RANGE_TOO_LARGE")
        return { code: error.code, detail: { ...error.detail } };
      throw error;
    }
    if (deep && rules.archive !== undefined && olderThanFull(need, group.served.height, rules.archive)) {
      group.answers.add("archive_required");
      const archiveLabel = mounted.admitted.endpoint.archiveLabel as string;
      return { code: "ARCHIVE_REQUIRED", detail: { ...archiveRequiredDetail(archiveLabel) } };
    }
    if (need.ranges.length === 0) return undefined;
    try {
      this.#planRanges(need, group);
      return undefined;
    } catch (error) {
      // too wide, or a bound no node reads alike: that call alone
      if (
        error instanceof GatewayError &&
        (error.code === "BLOCK_RANGE_TOO_LARGE" || error.code === "INVALID_REQUEST")
      )
        return { code: error.code, detail: { ...error.detail } };
      throw error;
    }
  }

  /** Whether `call` reads state at a block (registry `reads.archive`) for a key that may not reach archive nodes. */
  #mayBeTooOld(mounted: Mounted, call: PassedCall): boolean {
    const { endpoint, plan, principal } = mounted.admitted;
    const archive = mounted.mount.policy.jsonrpc?.reads?.archive;
    return (
      archive !== undefined &&
      endpoint.archiveLabel !== undefined &&
      archive.state.includes(call.method) &&
      !reachesArchive(plan?.archive, principal?.archive === true)
    );
  }

  /**
   * 6, for a use that scans its filter's whole range (eth_getFilterLogs): that range, up to the served head,
   * within the refuseAbove of the call that made the filter (range-plan.ts `checkFilterSpan`). Checked when
   * the filter was made with its part past the head counting as nothing, it widens as the chain moves on.
   */
  #checkScans(reads: ReadNeed, group: UpstreamGroup, mounted: Mounted): void {
    const rules = mounted.mount.policy.jsonrpc?.reads?.ranges;
    for (const { name, method } of reads.scans) {
      const span = group.states.spanOf(mounted.admitted.stateOwner, name);
      if (span === undefined) continue;
      try {
        checkFilterSpan(
          span,
          method,
          group.served.height,
          rules?.[span.method],
          this.#config.blockRanges[group.label],
        );
      } catch (error) {
        group.answers.add("range_refused");
        throw error;
      }
    }
  }

  /** 6, for range calls: their limits checked, and a split planned (src/answers/range-plan.ts). */
  #planRanges(reads: ReadNeed, group: UpstreamGroup): RangePlan {
    try {
      return planRanges(reads, group.served.height, this.#config.blockRanges[group.label], group.finalized);
    } catch (error) {
      group.answers.add("range_refused");
      throw error;
    }
  }

  /**
   * 6, for a read of state at a numbered block on a mainnet full label whose network has an archive
   * endpoint: how it may reach the archive nodes (src/answers/archive.ts). None for a block above the
   * label's head: it is not there yet, which no archive node changes.
   */
  #tierPlan(mounted: Mounted, reads: ReadNeed, group: UpstreamGroup): TierPlan | undefined {
    const { endpoint, principal } = mounted.admitted;
    const rule = mounted.mount.policy.jsonrpc?.reads?.archive;
    const archiveLabel = endpoint.archiveLabel;
    const head = group.served.height;
    // and a read of history older than a full node keeps state for, or of a transaction by its hash: a full
    // node first, which may have dropped it (a recent block's every node has)
    const history = reads.historyFrom;
    const oldHistory =
      history !== undefined &&
      rule !== undefined &&
      (history < 0 || (head >= 0 && history < head - rule.fullHistory));
    // a read of state that names no height the head counts is not known to be old either: a full node first
    const named = reads.stateBlock >= 0 || reads.stateByHash || reads.stateUnnamed || oldHistory;
    if (rule === undefined || archiveLabel === undefined || !named) return undefined;
    if (reads.single && head >= 0 && reads.stateBlock > head) return undefined;
    return {
      // a block named by hash is not known to be old until a full node says so; a batch goes to a full node
      // first, and only the calls it refuses go on
      direct: reads.single && olderThanFull(reads, head, rule),
      batch: reads.single ? undefined : reads.stateCalls,
      archiveLabel,
      archiveGroup: this.#upstreams.group(archiveLabel, mounted.mount.path),
      mayArchive: reachesArchive(mounted.admitted.plan?.archive, principal?.archive === true),
      missingState: rule.missingState,
      unknownHistory: rule.unknownHistory ?? [],
    };
  }

  /**
   * The archive label's upstreams at the mount, for a caller that may reach them (its key's grant, as its
   * plan allows): `group` undefined where the archive label has none; undefined where the label has no
   * archive endpoint or the caller may not reach it.
   */
  archiveGroup(
    mounted: Mounted,
  ): { readonly label: string; readonly group: UpstreamGroup | undefined } | undefined {
    const label = mounted.admitted.endpoint.archiveLabel;
    const { principal, plan } = mounted.admitted;
    if (label === undefined || !reachesArchive(plan?.archive, principal?.archive === true)) return undefined;
    return { label, group: this.#upstreams.group(label, mounted.mount.path) };
  }

  /** The mount's upstreams; NO_UPSTREAM without any. */
  group(mounted: Mounted): UpstreamGroup {
    const group = this.#upstreams.group(mounted.admitted.endpoint.label, mounted.mount.path);
    if (group === undefined)
      throw new GatewayError("NO_UPSTREAM", { reason: "no upstream is configured for this endpoint" });
    return group;
  }
}

/** Whether a read names, by number, a block older than a full node keeps: `fullHistory` below the served head. */
function olderThanFull(reads: ReadNeed, head: number, rule: ArchiveRule): boolean {
  return head >= 0 && reads.stateBlock >= 0 && reads.stateBlock < head - rule.fullHistory;
}

/**
 * Whether a call uses another caller's filter: its node would answer with that caller's logs, or remove it.
 * Each of the caller's own that it uses stays its own (node-states.ts), over HTTP or a WebSocket, alone or
 * in a batch.
 */
function madeByAnother(reads: ReadNeed, group: UpstreamGroup, mounted: Mounted): boolean {
  let another = false;
  for (const name of reads.handles)
    if (group.states.madeByAnother(mounted.admitted.stateOwner, name)) another = true;
  return another;
}

/**
 * The node that made the state (a filter) a call names, or for a name it does not know, the caller's node.
 * A name of the caller's own whose node left rotation, that another caller's filter also has (Nethermind
 * numbers each node's in turn), is refused: sent where the choice sends it, it could reach that one.
 */
function pinnedNode(handle: string, group: UpstreamGroup, owner: string): Upstream | undefined {
  const node = group.states.nodeOf(owner, handle);
  if (node === undefined && group.states.namedByAnother(owner, handle))
    throw new GatewayError("FILTER_NOT_FOUND");
  return node ?? group.states.ownerNode(owner);
}
