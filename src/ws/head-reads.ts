import { readNeed } from "../answers/read-need.js";
import { rpcErrorJson } from "../errors/respond.js";
import type { ErrorCode } from "../errors/table.js";
import type { ReadRules } from "../registry/types.js";
import { unreached } from "../upstream/failure.js";
import type { UpstreamGroup } from "../upstream/group.js";
import type { Upstream } from "../upstream/upstreams.js";
import type { ConnectionOptions } from "./connection-options.js";
import { askOnce, type BridgedMount, HttpBridge } from "./http-bridge.js";
import type { PendingCalls, UpstreamMessage } from "./pending-calls.js";

/**
 * Asks a node of the connection's label that has reached `atLeast` (`node`, when given: the one chosen for
 * its finality) one message of reads (its text, and its calls' ids: a batch's, or a single call's one), and
 * calls back with its answer; false, and nothing asked, when no node in rotation has reached it.
 */
export type HeadAsk = (
  callText: string,
  ids: readonly string[],
  batch: boolean,
  atLeast: number,
  node: Upstream | undefined,
  answered: (answer: string, failedHere: ReadonlyMap<string, ErrorCode> | undefined) => void,
) => boolean;

/** What asking another node of the label needs: its group and its name besides. */
export interface HeadTarget extends BridgedMount {
  readonly group: UpstreamGroup;
  readonly label: string;
}

/**
 * A connection keeps its node, whose head may be a block behind the one the label served to an HTTP caller
 * or another instance: its reads at the head, or of a block its node has not reached, go over HTTP to a
 * node that has (group.ts `choose` with the head they need), a message (a read, or a batch of reads) a
 * request, as a bridged connection's messages go (http-bridge.ts), and their answers take the node's place
 * by id. A caller reading over HTTP
 * and over a socket saw the head go back (docs/upstreams.md, "Answers across nodes").
 */
export function headAsk(target: HeadTarget): HeadAsk {
  return (callText, ids, batch, atLeast, node, answered) => {
    const upstream = node ?? target.group.choose(false, atLeast)[0];
    if (upstream === undefined) return false;
    const bridge = new HttpBridge(
      upstream,
      target.path,
      target.headers,
      target.limits.upstream,
      target.writes,
      target.errorForm,
      undefined,
      target.nodeErrors,
    );
    // in an HTTP caller's words for the same failure (failure.ts), not a second wording of its own
    const unanswered = (id: string) =>
      rpcErrorJson("NO_UPSTREAM", id, unreached().detail, target.requestId, target.errorForm);
    // the gateway's own errors, not the node's answers: the connection counts them as such (no cost)
    let failed: ReadonlyMap<string, ErrorCode> | undefined;
    askOnce(
      bridge,
      callText,
      () => {
        failed = new Map(ids.map((id) => [id, "NO_UPSTREAM"]));
        return batch ? `[${ids.map(unanswered).join(",")}]` : unanswered(ids[0] as string);
      },
      (answer, failedHere) => answered(answer, failedHere ?? failed),
    );
    return true;
  };
}

/** Where a connection's message of reads goes instead of its node: the block that node must have reached, and the node chosen for its finality. */
export interface ReadsElsewhere {
  readonly atLeast: number;
  readonly final: Upstream | undefined;
}

/**
 * Whether a message goes to another node of the label than the connection's `node`: a read at the head, or
 * of a block (by number, or by a hash, which may name a block the label served), that the node has not
 * reached goes to one that has, as does a batch of such reads; and a read
 * at the finalized tag, when another node named a higher finalized block than `node` (a caller shown that
 * block on another socket would see finality go back). A message with a write, a subscription, a filter's
 * call or a WebSocket-only call stays on the node: undefined.
 */
export function readsElsewhere(
  node: Upstream,
  outgoing: UpstreamMessage,
  pending: PendingCalls,
  options: Pick<ConnectionOptions, "servedHead" | "moreFinalThan" | "mounted">,
  rules: ReadRules | undefined,
): ReadsElsewhere | undefined {
  const { servedHead } = options;
  const head = node.health.head;
  if (servedHead === undefined || head === undefined) return undefined;
  const served = servedHead();
  const { calls } = outgoing;
  if (calls.length === 0) return undefined;
  const moreFinal = options.moreFinalThan?.(node);
  if (head >= served && moreFinal === undefined) return undefined;
  for (const call of calls) {
    const waiting = call.id === undefined ? undefined : pending.get(call.id);
    if (waiting?.kind !== "call" || waiting.write || call.access === "websocket") return undefined;
  }
  const need = readNeed(rules, options.mounted.mount.head, calls, !outgoing.batch);
  if (need === undefined || need.handle !== undefined || need.makesHandle) return undefined;
  // A read by hash too: the label may have served that block (a best hash asked on this very socket went to
  // a node at the head), and a node below the served head has not seen it: it answers null, or UnknownBlock
  const atLeast = Math.max(need.atHead || need.byHash ? served : -1, need.highestBlock);
  const final = need.atFinalized ? moreFinal : undefined;
  if (atLeast <= head && final === undefined) return undefined;
  return { atLeast, final };
}

/**
 * Whether a message must wait for the connection's own node to reach the label's served head before it
 * goes: it holds a WebSocket-only call (state the node keeps for the connection, so no other node can take
 * it) that the registry reads at the head (`reads.atHead`: Ogmios' acquireLedgerState and findIntersection,
 * whose point the caller may have read from the served head, and which a node that has not reached it
 * refuses as a point not on its chain). False at once while the node is at that head.
 */
export function waitsForHead(
  node: Upstream,
  outgoing: UpstreamMessage,
  servedHead: (() => number) | undefined,
  rules: ReadRules | undefined,
): boolean {
  const head = node.health.head;
  if (servedHead === undefined || head === undefined || rules?.atHead === undefined) return false;
  if (head >= servedHead()) return false;
  return holdsPoint(outgoing, rules);
}

/**
 * Whether a message holds a WebSocket-only call that the registry reads at the head: state its node keeps
 * for the connection at a point (Ogmios' acquireLedgerState, findIntersection), which the answers to the
 * connection's later reads may depend on (a ledger state acquired answers its queries there, not at the tip).
 */
export function holdsPoint(outgoing: UpstreamMessage, rules: ReadRules | undefined): boolean {
  const atHead = rules?.atHead;
  if (atHead === undefined) return false;
  for (const call of outgoing.calls)
    if (call.access === "websocket" && atHead.includes(call.method)) return true;
  return false;
}
