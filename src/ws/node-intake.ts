import type { RawData } from "ws";
import type { PassedCall } from "../jsonrpc/check.js";
import { scanMembers } from "../jsonrpc/scan.js";
import type { JsonRpcPolicy } from "../registry/types.js";
import type { Upstream } from "../upstream/upstreams.js";
import { type ArchiveAsking, askArchive, plainReadsBeside } from "./archive-reads.js";
import type { ConnectionOptions } from "./connection-options.js";
import { deliver, type FillContext, recordStart } from "./gap-fill.js";
import type { GatewayCalls } from "./gateway-calls.js";
import { toText } from "./message-intake.js";
import { paramsOf } from "./message-sender.js";
import { type ArchiveRefusals, archiveRefusals, missingStateIds, withinCap } from "./node-answers.js";
import type { Settled } from "./pending-calls.js";
import type { RememberedSubscriptions, ShownBlock } from "./subscriptions.js";

/** What a connection's node intake reads of its connection (connection.ts). */
export interface NodeIntakeHost extends ArchiveAsking, Settled {
  /** The node the connection's upstream socket is on. */
  readonly node: Upstream;
  readonly remembered: RememberedSubscriptions;
  /** The gateway's own calls on the node's socket (gap fills, a move's subscribe calls). */
  readonly calls: GatewayCalls;
  /** Sends to the client as it came (`binary`: a binary frame), unless it stopped reading. */
  relay(data: string | RawData, binary: boolean): void;
  /** Closes a connection whose quota is spent once nothing it was charged for waits. */
  closeIfSpent(): void;
  /** The node answered a call: a connection waiting to leave it for a better one may go now (node-choice.ts). */
  nodeAnswered(): void;
}

/**
 * What a connection's node sends it, in arrival order: answers to the client's calls, which settle the
 * connection's ledger (pending-calls.ts) and go to the client under the ids it gave; answers to the gateway's
 * own calls; and notifications, which teach the label the node's head before the client has them. A read the
 * node no longer has the state for goes to the archive nodes (archive-reads.ts) when the key may reach them.
 * The client's side is message-intake.ts.
 */
export class NodeIntake {
  readonly #host: NodeIntakeHost;
  readonly #options: ConnectionOptions;
  readonly #policy: JsonRpcPolicy;
  readonly #fill: FillContext;
  readonly #archiveRefusals: ArchiveRefusals | undefined;
  /** The texts of a node's "no such state" answers (registry `reads.archive.missingState`). */
  readonly #missingState: readonly string[] | undefined;
  /** Reads of history, and the texts of a node's answers that may be of history it dropped (`unknownHistory`). */
  readonly #history: readonly string[];
  readonly #unknownHistory: readonly string[] | undefined;

  constructor(host: NodeIntakeHost, options: ConnectionOptions, policy: JsonRpcPolicy, fill: FillContext) {
    this.#host = host;
    this.#options = options;
    this.#policy = policy;
    this.#fill = fill;
    this.#archiveRefusals = archiveRefusals(options.mounted);
    this.#missingState = policy.reads?.archive?.missingState;
    this.#history = policy.reads?.archive?.history ?? [];
    this.#unknownHistory = policy.reads?.archive?.unknownHistory;
  }

  /** `fromArchive`: the message holds answers another node gave (an archive node's, or a node's at the head). */
  receive(data: RawData, isBinary: boolean, fromArchive = false): void {
    const host = this.#host;
    const { pending, calls, remembered } = host;
    // Notifications with nothing pending pass straight through, never decoded: with nothing to watch, or
    // for the connection's only subscription, whose position is read from its last one if a move needs it.
    if (pending.size === 0 && calls.size === 0) {
      const solo = remembered.watching ? remembered.solo() : undefined;
      if (!remembered.watching || solo !== undefined) {
        if (solo !== undefined) {
          const idMember = remembered.rules?.idMember ?? "";
          const pushed = Buffer.isBuffer(data) ? data : toText(data);
          solo.passedOn(pushed, idMember);
          const { kind } = solo;
          if (kind !== undefined)
            this.#learnHead(() => solo.pushedBlock(pushed, idMember), kind.heads?.finalized === true);
        }
        host.relay(data, isBinary);
        return;
      }
    }
    const received = toText(data);
    const { mounted, limits } = this.#options;
    const text = withinCap(
      received,
      limits.upstream.maxResponseBytes,
      mounted.admitted.requestId,
      this.#policy,
      (id) => pending.failedHere(id, "UPSTREAM_RESPONSE_TOO_LARGE"),
    );
    if (text === undefined) return;
    let envelopes = scanMembers(text);
    // a read the node no longer has the state for, from the archive nodes when the key may reach them
    const ask = this.#options.archiveAsk;
    if (!fromArchive && ask !== undefined && this.#missingState !== undefined) {
      const dropped = this.#maybeDropped(text, envelopes);
      const missing = [...missingStateIds(this.#missingState, text, envelopes), ...dropped].filter(
        (id, i, all) => pending.get(id) !== undefined && all.indexOf(id) === i,
      );
      if (missing.length > 0 && plainReadsBeside(pending, envelopes, missing)) {
        // a history read the archive does not know either keeps the node's answer, at its price, as over HTTP
        const unknown = this.#unknownHistory ?? [];
        const stillUnknown = (id: string, answer: string) =>
          dropped.includes(id) && unknown.some((name) => answer.includes(`"${name}"`));
        askArchive(host, ask, envelopes, missing, text.trimStart().startsWith("["), stillUnknown);
        return;
      }
    }
    // an answer over the cap goes on as the errors that replace it; one of no such state as ARCHIVE_REQUIRED
    // (an archive node's own "no such state", for a key that reached it, is its answer, as over HTTP)
    let answer = fromArchive
      ? text
      : (this.#archiveRefusals?.(text, envelopes, (id) => pending.failedHere(id, "ARCHIVE_REQUIRED")) ??
        text);
    // a node's error about an id it could not read names no call: the call (or batch) it is answered with
    // it by its own id, else the client would wait for it, and the call hold its slot, for ever
    const owned = envelopes.length === 1 ? pending.nullIdAnswer(envelopes[0]) : undefined;
    if (owned !== undefined) {
      answer = owned;
      envelopes = scanMembers(answer);
    }
    const out: string | RawData = answer === received ? data : answer;
    const only = envelopes.length === 1 ? envelopes[0] : undefined;
    if (only !== undefined) {
      const id = only.get("id");
      if (only.has("method") && id === undefined) {
        this.#notification(text, only);
        return;
      }
      if (id !== undefined && calls.settle(id, text, only)) return;
    }
    // before the cache may keep it (settle): an answer a block past the label's served head moves it first
    if (!fromArchive) this.#learnHeights(envelopes, text);
    const answered = pending.settle(envelopes, host);
    const renamed = pending.renamedAnswers(envelopes, text);
    const merged = pending.merged(renamed ?? answer, answered);
    const sent = merged ?? renamed ?? out;
    host.relay(sent, sent === data && isBinary);
    host.closeIfSpent();
    host.nodeAnswered();
  }

  /**
   * The ids of the history reads (registry `archive.history`) the node answered with an error that may be of
   * history it dropped or never had (`unknownHistory`): asked of the archive nodes once more, as over HTTP.
   */
  #maybeDropped(text: string, envelopes: readonly ReadonlyMap<string, string>[]): string[] {
    const texts = this.#unknownHistory;
    if (texts === undefined) return [];
    const pending = this.#host.pending;
    return missingStateIds(texts, text, envelopes).filter((id) => {
      const method = pending.get(id)?.call?.method;
      return method !== undefined && this.#history.includes(method);
    });
  }

  /** Remembers a subscription the node made: the id the client is to know it by. */
  remember(call: PassedCall, id: string): string {
    const subscription = this.#host.remembered.add(
      call.method,
      call.call.members.get("params"),
      paramsOf(call),
      id,
    );
    if (subscription.kind?.events !== undefined) recordStart(subscription, this.#fill);
    return subscription.clientId;
  }

  /** The calls of the connection's own node's answer that it answered with a result, told to the label. */
  #learnHeights(envelopes: readonly ReadonlyMap<string, string>[], text: string): void {
    const learn = this.#options.learnHeights;
    if (learn === undefined) return;
    const calls: PassedCall[] = [];
    for (const members of envelopes) {
      const id = members.get("id");
      const pending = id === undefined || !members.has("result") ? undefined : this.#host.pending.get(id);
      if (pending?.kind === "call") calls.push(pending.call);
    }
    if (calls.length > 0) learn(this.#host.node, calls, !text.trimStart().startsWith("["), text);
  }

  #notification(text: string, members: ReadonlyMap<string, string>): void {
    const host = this.#host;
    const found = host.remembered.notified(members);
    if (found === undefined) {
      host.relay(text, false);
      return;
    }
    const { subscription, result } = found;
    const { kind } = subscription;
    if (kind !== undefined)
      this.#learnHead(() => subscription.shownBlock(result), kind.heads?.finalized === true);
    // a runtime upgrade: the client asks the new metadata next, on this socket, and reads the node's own
    if (subscription.headChange) this.#options.headChanged?.(host.node, result);
    deliver(subscription, result, text, this.#fill);
    // the node has ended it (registry `ends`): it pins the connection no more, nor holds a subscription slot
    if (subscription.endsWith(result)) host.remembered.remove(subscription);
  }

  /**
   * A header the node pushed, or an event's block, is told to the label before the client has it: its
   * served head, and the answers the cache keeps at the head, move to it first, else the client told block
   * N+1 read N back from the cache on the same socket. A finalized header's block is one the node has, no
   * lower head, and one it holds final: the label's next read at the finalized tag goes to a node at least
   * as final.
   */
  #learnHead(block: () => ShownBlock | undefined, finalized: boolean): void {
    this.#options.learnHead?.(this.#host.node, block, finalized);
  }
}
