import type { Span } from "@opentelemetry/api";
import { answerTakes } from "../answers/write-taken.js";
import type { ErrorCode } from "../errors/table.js";
import type { PassedCall } from "../jsonrpc/check.js";
import { idKey, isUnreadableId } from "../jsonrpc/id-key.js";
import { type BatchLayout, mergeBatchAnswer, refusalsOf } from "../jsonrpc/merge.js";
import { scanMembers } from "../jsonrpc/scan.js";
import type { BodyTest } from "../registry/types.js";
import type { CacheKeep } from "./cached-calls.js";
import { textOf } from "./node-answers.js";
import type { Subscription } from "./subscriptions.js";

/** A client message sent upstream, or waiting to be while the connection moves. */
export interface UpstreamMessage {
  /** Its text as it goes out; undefined when it must be built at sending (an unsubscribe is rewritten). */
  text: string | undefined;
  calls: readonly PassedCall[];
  readonly batch: boolean;
  sent: boolean;
  /** Its span, when its connection is traced: it ends when the node has answered its last call. */
  span?: Span | undefined;
  /**
   * Counts it once the node has answered its last call, or with the code it was refused with (a move's
   * WRITE_NOT_CONFIRMED); set while its count waits (message-sender.ts LATER), then cleared.
   */
  whenAnswered?:
    | ((code?: ErrorCode, failedHere?: readonly FailedHere[], archived?: readonly PassedCall[]) => void)
    | undefined;
  /**
   * Its calls answered with the gateway's own error instead of the node's answer: ARCHIVE_REQUIRED for one
   * of "no such state" (node-answers.ts), an answer over the cap, a bridged node's failure (http-bridge.ts).
   */
  failedHere?: FailedHere[] | undefined;
  /** Its calls the node answered "no such state", answered by the archive nodes instead (archive-reads.ts). */
  archived?: PassedCall[] | undefined;
  /** Its writes a move could not confirm, while its reads go again: priced and counted as refused. */
  writesLost?: ((calls: readonly PassedCall[]) => void) | undefined;
  /** Its node refused the connection it went on (a bridge's): no node got it, and it goes again whole (move.ts). */
  undelivered?: boolean | undefined;
  /**
   * It was alone in flight when the node's socket closed for a message past four times the size cap
   * (1009): that message was its answer, which any node would answer alike; it is not sent again (move.ts).
   */
  oversized?: boolean | undefined;
}

/** A call the gateway answered with its own error `code`: it costs nothing, and counts as that error. */
export interface FailedHere {
  readonly call: PassedCall;
  readonly code: ErrorCode;
}

/** A call sent upstream and not answered yet. */
export interface Pending {
  readonly kind: "call" | "subscribe" | "unsubscribe";
  readonly call: PassedCall;
  readonly message: UpstreamMessage;
  /** It submits something (registry `writes`): never sent to a second node. */
  readonly write: boolean;
  /** How its node refuses a write at a success status (registry `refusedWrite`). */
  readonly refusedWrite?: readonly BodyTest[] | undefined;
  /** An unsubscribe's subscription. */
  readonly target: Subscription | undefined;
  /** An unsubscribe naming none the client holds: the node's id it names, and what is sent in its place. */
  readonly shadowed?: readonly [string, string] | undefined;
  /** A call the cache missed: what it keeps of the node's answer (cached-calls.ts). */
  keep?: CacheKeep | undefined;
}

/** What settling a node's answer tells the connection about its subscriptions, and about its writes. */
export interface Settled {
  /** A subscribe call was answered with the node's id for it: the id the client is to know it by. */
  subscribed(call: PassedCall, upstreamId: string): string;
  /** An unsubscribe call succeeded. */
  unsubscribed(target: Subscription | undefined): void;
  /** A write was answered: what the caller reads next at the head may differ (src/cache/). */
  wrote(): void;
  /** A call was answered with `result` (JSON text): one that made a filter names it (registry `reads.handles`). */
  made(call: PassedCall, result: string): void;
  /** The last of a traced message's calls was answered. */
  answered(message: UpstreamMessage): void;
  /** A call the cache missed was answered: the cache may keep the answer. */
  kept(keep: CacheKeep, members: ReadonlyMap<string, string>): void;
  /** A call the cache missed was answered with the gateway's own error: the calls waiting on it ask a node. */
  drop(keep: CacheKeep): void;
}

/**
 * One connection's ledger of the calls it sent upstream and awaits answers to, by their id's value (a node
 * may write `"\u0061"` back as `"a"`: jsonrpc/id-key.ts); of
 * the subscription slots that subscribe calls in flight hold; and of the batches some of whose calls the
 * gateway refused, whose refusals join the node's answer to the rest when it comes.
 */
export class PendingCalls {
  readonly #byId = new Map<string, Pending>();
  /** Subscribe answers whose id the client is to know otherwise (subscriptions.ts `add`), by call id. */
  readonly #renamed = new Map<string, string>();
  /** Batches with refused calls: the node's answer to the rest is merged with the refusals. */
  readonly #partialBatches: { ids: Set<string>; refused: (string | undefined)[] }[] = [];
  #reservedSubscriptions = 0;

  get size(): number {
    return this.#byId.size;
  }

  /** Subscription slots held by subscribe calls not answered yet. */
  get reservedSubscriptions(): number {
    return this.#reservedSubscriptions;
  }

  get(id: string): Pending | undefined {
    return this.#byId.get(idKey(id));
  }

  /** Holds a subscription slot for a subscribe call about to go out: a burst cannot overshoot the bound. */
  reserveSubscription(): void {
    this.#reservedSubscriptions++;
  }

  add(entries: readonly Pending[]): void {
    for (const entry of entries) this.#byId.set(idKey(entry.call.id), entry);
  }

  delete(id: string): void {
    this.#byId.delete(idKey(id));
  }

  /** The call `id` is answered with the gateway's error `code`, not the node's answer: its message's count says so. */
  failedHere(id: string, code: ErrorCode): void {
    const pending = this.#byId.get(idKey(id));
    if (pending === undefined) return;
    pending.message.failedHere ??= [];
    pending.message.failedHere.push({ call: pending.call, code });
  }

  /** The call `id` is answered by the archive nodes, not the connection's: priced as theirs. */
  archived(id: string): void {
    const pending = this.#byId.get(idKey(id));
    if (pending === undefined) return;
    pending.message.archived ??= [];
    pending.message.archived.push(pending.call);
  }

  /** The message holding the calls of `text` reached no node (a bridge's node refused the connection). */
  undelivered(text: string): void {
    for (const call of scanMembers(text)) {
      const id = call.get("id");
      const message = id === undefined ? undefined : this.#byId.get(idKey(id))?.message;
      if (message !== undefined) message.undelivered = true;
    }
  }

  /** The call, sent again in another message; that message carries on the first one's span, if any. */
  resend(id: string, message: UpstreamMessage): void {
    const key = idKey(id);
    const pending = this.#byId.get(key);
    if (pending === undefined) return;
    if (message.span === undefined) message.span = pending.message.span;
    // the message is counted once the calls sent again are answered (message-sender.ts LATER)
    if (message.whenAnswered === undefined) message.whenAnswered = pending.message.whenAnswered;
    this.#byId.set(key, { ...pending, message });
  }

  /** A batch whose calls `ids` went upstream, and whose `refused` calls are answered with the node's answer. */
  holdRefusals(ids: Set<string>, refused: BatchLayout): void {
    const held = this.#partialBatches.find((b) => [...ids].some((id) => b.ids.has(id)));
    // refused later (a move's writes): after the answers, whose places they had
    if (held !== undefined) held.refused.push(...refusalsOf(refused));
    else this.#partialBatches.push({ ids, refused: [...refused] });
  }

  /**
   * Clears the calls these answers settle, telling `settled` of subscriptions made and ended; the ids
   * settled, as their calls wrote them.
   */
  settle(envelopes: readonly ReadonlyMap<string, string>[], settled: Settled): string[] {
    const ids: string[] = [];
    for (const members of envelopes) {
      const id = members.get("id");
      // an answer is an id with a result or an error; Ogmios names the call's method beside them
      // (Ogmios/App/Protocol.hs), and its call, left in flight, held its slot for good (101 nextBlock
      // calls: TOO_MANY_IN_FLIGHT) and its cache flight till it timed out
      if (id === undefined || (members.has("method") && !members.has("result") && !members.has("error")))
        continue;
      const key = idKey(id);
      const pending = this.#byId.get(key);
      if (pending === undefined) continue;
      this.#byId.delete(key);
      ids.push(pending.call.id as string);
      const result = members.has("error") ? undefined : members.get("result");
      // a write the node refused changed nothing (answers/write-taken.ts)
      if (pending.write && answerTakes(members, pending.refusedWrite)) settled.wrote();
      // the gateway's own error in the node's place (ARCHIVE_REQUIRED for "no such state") is this
      // caller's alone: the node's answer is no other key's to share, nor to keep
      if (pending.keep !== undefined)
        if (pending.message.failedHere?.some((f) => f.call === pending.call)) settled.drop(pending.keep);
        else settled.kept(pending.keep, members);
      if (pending.kind === "call" && result !== undefined) settled.made(pending.call, result);
      if (pending.kind === "subscribe") {
        this.#reservedSubscriptions--;
        const clientId = result === undefined ? undefined : settled.subscribed(pending.call, result);
        if (clientId !== undefined && clientId !== result) this.#renamed.set(id, clientId);
      } else if (
        pending.kind === "unsubscribe" &&
        (result === "true" || (result !== undefined && pending.target?.ends !== undefined))
      ) {
        // `false` too for one the node ends itself (registry `ends`): it holds nothing under that id, so
        // nothing is left to pin the connection or to make again; the client gets `false` all the same. Any
        // other's `false` says nothing: a node answers so an unsubscribe of another method (jsonrpsee keeps
        // each method's subscriptions apart), or params it cannot read, and the subscription goes on
        settled.unsubscribed(pending.target);
      }
      const { message } = pending;
      if (
        (message.span !== undefined || message.whenAnswered !== undefined) &&
        this.unanswered(message).length === 0
      ) {
        if (message.span !== undefined) settled.answered(message);
        message.whenAnswered?.(undefined, message.failedHere, message.archived);
      }
    }
    return ids;
  }

  /**
   * The answers just settled with the ids of the subscriptions they made rewritten, where the client knows
   * one by another id than the node's; undefined when none is (nearly always).
   */
  renamedAnswers(envelopes: readonly ReadonlyMap<string, string>[], text: string): string | undefined {
    if (this.#renamed.size === 0) return undefined;
    const batch = text.trimStart().startsWith("[");
    const answers = envelopes.map((members) => {
      const clientId = this.#renamed.get(members.get("id") ?? "");
      if (clientId === undefined) return textOf(members);
      return textOf(
        new Map([...members].map(([name, value]) => [name, name === "result" ? clientId : value])),
      );
    });
    this.#renamed.clear();
    return batch ? `[${answers.join(",")}]` : (answers[0] as string);
  }

  /** The node's answer `text` to a partial batch, merged with its refusals; undefined when it answers none. */
  merged(text: string, answered: readonly string[]): string | undefined {
    if (this.#partialBatches.length === 0 || answered.length === 0) return undefined;
    const index = this.#partialBatches.findIndex((b) => answered.some((id) => b.ids.has(id)));
    if (index < 0) return undefined;
    const [batch] = this.#partialBatches.splice(index, 1);
    return batch === undefined ? undefined : mergeBatchAnswer(text, batch.refused);
  }

  /**
   * Whose an error answered with `"id":null` is: the oldest call in flight whose id a node cannot read
   * (jsonrpc/id-key.ts isUnreadableId: anvil and reth answer 1.5 or a 23-digit id so, and refuse a whole batch
   * that holds one), as the calls it answers: that call, or every call of its batch still waiting. With
   * several such calls in flight the node's errors are alike (about their ids), so the oldest takes the
   * first. Undefined when no call has such an id.
   */
  nullIdOwners(): { readonly calls: PassedCall[]; readonly batch: boolean } | undefined {
    for (const pending of this.#byId.values()) {
      const id = pending.call.id;
      if (id === undefined || !isUnreadableId(id)) continue;
      const { batch } = pending.message;
      return { calls: batch ? this.unanswered(pending.message) : [pending.call], batch };
    }
    return undefined;
  }

  /**
   * A node's error with `"id":null` (`members`) as the answer of the calls it is (`nullIdOwners`), each by
   * its own id; undefined for any other answer, or when no call owns it.
   */
  nullIdAnswer(members: ReadonlyMap<string, string> | undefined): string | undefined {
    if (members === undefined || members.get("id") !== "null" || !members.has("error")) return undefined;
    const owners = this.nullIdOwners();
    if (owners === undefined || owners.calls.length === 0) return undefined;
    const answers = owners.calls.map((call) => textOf(members, call.id));
    return owners.batch ? `[${answers.join(",")}]` : (answers[0] as string);
  }

  /** The pending calls. */
  values(): IterableIterator<Pending> {
    return this.#byId.values();
  }

  /** Whether a message in flight is the one whose answer closed the node's socket for its size. */
  oversizedInFlight(): boolean {
    for (const pending of this.#byId.values()) if (pending.message.oversized === true) return true;
    return false;
  }

  /** The messages that went out and still wait for an answer to one of their calls. */
  sentAndUnanswered(): Set<UpstreamMessage> {
    const messages = new Set<UpstreamMessage>();
    for (const pending of this.#byId.values()) if (pending.message.sent) messages.add(pending.message);
    return messages;
  }

  /** The writes that went out and are not answered yet, by the message they went in, in the order sent. */
  sentWrites(): Map<UpstreamMessage, Pending[]> {
    const byMessage = new Map<UpstreamMessage, Pending[]>();
    for (const pending of this.#byId.values()) {
      const { message } = pending;
      if (!pending.write || !message.sent || pending.call.id === undefined) continue;
      const writes = byMessage.get(message);
      if (writes === undefined) byMessage.set(message, [pending]);
      else writes.push(pending);
    }
    return byMessage;
  }

  /** The calls of `message` still waiting for their answer in it. */
  unanswered(message: UpstreamMessage): PassedCall[] {
    return message.calls.filter(
      (c) => c.id !== undefined && this.#byId.get(idKey(c.id))?.message === message,
    );
  }
}
