import type { Span } from "@opentelemetry/api";
import type { Limits } from "../config/types.js";
import type { ErrorCode } from "../errors/table.js";
import { type CallRules, type Checked, no, type PassedCall, sendableAsReceived } from "../jsonrpc/check.js";
import { idKey } from "../jsonrpc/id-key.js";
import { type BatchLayout, batchLayout, refusalsOf } from "../jsonrpc/merge.js";
import type { CheckedMessage } from "../jsonrpc/message.js";
import { resultOf } from "../metrics/gateway-metrics.js";
import type { Charged } from "../pipeline/stages.js";
import type { BatchPart } from "../plans/compute-units.js";
import type { QuotaHold } from "../plans/quota-hold.js";
import type { BodyTest, JsonRpcPolicy } from "../registry/types.js";
import type { Upstream } from "../upstream/upstreams.js";
import type { CachedCalls, Follow } from "./cached-calls.js";
import type { FailedHere, Pending, PendingCalls, UpstreamMessage } from "./pending-calls.js";
import type { RememberedSubscriptions } from "./subscriptions.js";

/** What the metrics and the usage count of one client message, as far as it got. */
export interface MessageSeen {
  replyId: string;
  method: string;
  code: ErrorCode | undefined;
  calls: number;
  refused: number;
  /** The compute units of its calls that passed their checks; billed when sent. */
  units: number;
  /** When its quota took its units (plans/quota-hold.ts): the day its usage counts in; none without a hold. */
  heldAt: number | undefined;
  counted?: boolean;
  /** Its span, when the connection is traced (src/tracing/). */
  span: Span | undefined;
  /** Its calls went to the node: its span ends with the node's last answer (pending-calls.ts). */
  sent?: boolean;
  /** A batch's calls that passed, by id, and the answers of those refused on their own (a later refusal's answer). */
  batch?: {
    readonly ids: readonly string[];
    readonly refusals: BatchLayout;
    /** The refused calls' codes, one each, for the key's errors by code. */
    readonly codes: readonly string[];
    /** The calls that passed, by method, for the key's usage by method. */
    readonly parts: readonly BatchPart[];
  };
}

/** What a connection lends its sender (connection.ts). */
export interface SenderHost {
  readonly pending: PendingCalls;
  readonly remembered: RememberedSubscriptions;
  readonly rules: CallRules;
  readonly policy: JsonRpcPolicy;
  /** How its node refuses a write at a success status (registry `refusedWrite`). */
  readonly refusedWrite: readonly BodyTest[] | undefined;
  readonly limits: Limits;
  /** What these calls cost in compute units (docs/compute-units.md). */
  unitsOf(calls: readonly PassedCall[]): number;
  /** What these calls cost more when archive nodes answer them (the interface's archive factor). */
  archiveExtraOf(calls: readonly PassedCall[]): number;
  /** What an answer from the cache costs, as a share of its price (the plan's `cachedShare`; 1 without one). */
  readonly cachedShare: number;
  readonly cache: CachedCalls | undefined;
  readonly closed: boolean;
  /** The node the connection's calls go to: one behind the label's served head is not given its head's answers. */
  readonly node: Upstream;
  /** A WebSocket-only call went upstream: the node holds state for the connection now. */
  stateful(): void;
  /** Sends a message to the node, or keeps it while the connection moves. */
  transmit(outgoing: UpstreamMessage): void;
  toClient(text: string): void;
  /** Closes a connection whose quota is spent once nothing it was charged for waits. */
  closeIfSpent(): void;
  /** Counts a message whose count waited (LATER), now that it has its answer, and sends the answer if any. */
  finish(seen: MessageSeen, answer: string | undefined): void;
  /** A message the gateway failed after it went (a write a move refused): logged, as an HTTP request's is. */
  failed(seen: MessageSeen): void;
  /** A batch's calls by method, for the key's usage (plans/compute-units.ts batchParts). */
  partsOf(calls: readonly PassedCall[]): BatchPart[];
  guard<A extends unknown[]>(listener: (...args: A) => void): (...args: A) => void;
}

/**
 * What `send` answers for a message whose count waits for its answer: a call that waits on an identical
 * call in flight (counted when that lands), or one that holds a write, which may yet end
 * WRITE_NOT_CONFIRMED (counted when the node has answered it, or the write was refused).
 */
export const LATER = Symbol("counted once answered");

/**
 * Stage 7 of a connection's messages, toward the node: a single call from the label's cache, or waiting on
 * an identical call in flight (cached-calls.ts); the rest within the connection's in-flight and
 * subscription slots, as one message to the node, its unsubscribe calls naming the node's own ids.
 */
export class MessageSender {
  readonly #host: SenderHost;
  /** Calls waiting on an identical call in flight (cached-calls.ts), counted against the in-flight cap. */
  #following = 0;
  /**
   * Their ids (idKey): waiting for their answers as a pending call's are, so a call with one is refused
   * (else the client had two answers with one id), until the call waited on lands or has none to share.
   */
  readonly #followingIds = new Set<string>();
  /**
   * A WebSocket-only call went to the node: it holds state its answers to later reads may depend on (an
   * Ogmios ledger state acquired at an old point answers queryLedgerState/* there, not at the tip), so
   * the connection's calls meet the label's cache no more, neither answered from it nor kept in it.
   */
  #holdsState = false;

  constructor(host: SenderHost) {
    this.#host = host;
  }

  /** Calls that wait on another's answer and have not had it. */
  get following(): number {
    return this.#following;
  }

  /**
   * Sends what passed upstream and returns the answer for what did not. A single call the cache answers, or
   * one that waits on an identical call in flight, does not reach the node (`cached` false: it is asked of
   * the node, after the call it waited on had no answer to share).
   */
  send(
    message: Charged<CheckedMessage>,
    text: string,
    seen: MessageSeen,
    hold: QuotaHold | undefined,
    cached = true,
  ): string | undefined | typeof LATER {
    // a call whose id waits already is refused before the cache opens anything for it
    const only = message.batch ? undefined : message.checked[0];
    if (only?.ok === true && only.id !== undefined && this.#waiting(only.id)) {
      this.#unsent(seen, hold, "INVALID_REQUEST");
      return this.#idInFlight(only).json;
    }
    const looked =
      message.batch || !cached
        ? undefined
        : this.#lookup(only, (answer) => this.#followed(answer, message, text, seen, hold));
    if (looked === "following") {
      // priced and counted once it lands: with an answer to share, or asked of a node after all
      this.#following++;
      if (only?.ok === true && only.id !== undefined) this.#followingIds.add(idKey(only.id));
      return LATER;
    }
    if (looked !== undefined && "answer" in looked) {
      this.#cachedPrice(seen, hold);
      return looked.answer;
    }
    const outgoing: UpstreamMessage = { text: undefined, calls: [], batch: message.batch, sent: false };
    const pending: Pending[] = [];
    const checked = message.checked.map((call) => this.#admit(call, outgoing, pending));
    if (looked !== undefined) {
      // refused at the last (the in-flight cap): the calls that would wait on it ask a node themselves
      if (pending[0] !== undefined) pending[0].keep = looked.keep;
      else this.#host.cache?.drop(looked.keep);
    }
    const passed = checked.filter((c): c is PassedCall => c.ok);
    // the refusals' answers: none for a notification (JSON-RPC 2.0 §4.1), which is counted all the same
    const layout = batchLayout(checked);
    const refused = refusalsOf(layout);
    // calls refused here (an id in flight, a full connection) cost nothing and count as refused, as at 4
    // counted without an array made: this runs for every message
    let refusedHere = 0;
    for (let i = 0; i < checked.length; i++)
      if (!(checked[i] as Checked).ok && message.checked[i]?.ok === true) refusedHere++;
    if (refusedHere > 0) {
      seen.refused += refusedHere;
      if (seen.batch !== undefined) seen.batch = this.#refusedHere(seen.batch, message, checked, passed);
      if (passed.length === 0) this.#unsent(seen, hold, (checked[0] as { code: ErrorCode }).code);
      else {
        seen.units = this.#host.unitsOf(passed);
        hold?.settle(seen.units);
      }
    }
    // a batch of refused notifications only: nothing, as the node answers one of notifications only
    if (passed.length === 0) {
      const first = checked[0] as Checked;
      if (!message.batch) return !first.ok && first.notification ? undefined : first.json;
      return refused.length > 0 ? `[${refused.join(",")}]` : undefined;
    }
    const rewritten = pending.some(
      (p) =>
        (p.target !== undefined && p.target.upstreamId !== p.target.clientId) || p.shadowed !== undefined,
    );
    outgoing.calls = passed;
    outgoing.text = rewritten ? undefined : sendableAsReceived(text, checked) ? text : undefined;
    if (seen.span !== undefined && pending.length > 0) {
      outgoing.span = seen.span;
      seen.sent = true;
    }
    // A message is counted once the node answered it: a write refused (a move) costs nothing, a read the
    // node answered "no such state" is ARCHIVE_REQUIRED and costs nothing, and one that no node answered
    // (the gateway closed the connection, the caller left) costs nothing, as over HTTP. Only notifications,
    // which get no answer to wait for, count as sent.
    const writes = pending.some((p) => p.write);
    const later = writes || passed.some((c) => c.id !== undefined);
    const counted = later ? this.#countOnAnswer(outgoing, seen, hold, writes) : undefined;
    this.#host.pending.add(pending);
    this.#host.transmit(outgoing);
    if (refused.length === 0 || !message.batch) return counted;
    const ids = new Set(passed.flatMap((c) => (c.id !== undefined ? [c.id] : [])));
    // Only notifications went upstream: the node will send nothing to merge into (JSON-RPC 2.0 §6).
    if (ids.size === 0) {
      outgoing.whenAnswered = undefined;
      return `[${refused.join(",")}]`;
    }
    this.#host.pending.holdRefusals(ids, layout);
    return counted;
  }

  /** The cache's answer to a single call, or what to keep of the node's: a read only, never a write. */
  #lookup(checked: Checked | undefined, follow: Follow): ReturnType<CachedCalls["lookup"]> {
    const cache = this.#host.cache;
    if (cache === undefined || checked === undefined || !checked.ok || this.#holdsState) return undefined;
    if (checked.access !== "shared" && checked.access !== "dedicated") return undefined;
    if (this.#host.policy.writes.has(checked.method)) return undefined;
    // a call that waits on another counts against the in-flight cap as one sent would
    const room = this.#host.pending.size + this.#following < this.#host.limits.ws.maxInFlight;
    return cache.lookup(checked, room ? follow : undefined, this.#host.node);
  }

  /** The call a message waited on landed: its answer to the client, or, with none to share, the node asked. */
  #followed(
    answer: string | undefined,
    message: Charged<CheckedMessage>,
    text: string,
    seen: MessageSeen,
    hold: QuotaHold | undefined,
  ): void {
    this.#following--;
    const only = message.checked[0];
    if (only?.ok === true && only.id !== undefined) this.#followingIds.delete(idKey(only.id));
    if (this.#host.closed) {
      // its caller left before it had an answer: it cost nothing, as a call whose caller hung up
      seen.units = 0;
      seen.code = "CLIENT_CLOSED";
      hold?.settle(0);
      this.#host.finish(seen, undefined);
      return;
    }
    if (answer !== undefined) {
      this.#cachedPrice(seen, hold);
      this.#host.finish(seen, answer);
      // after the answer being settled now, when it is this connection's own call's: a spent quota's
      // close would otherwise come before that answer, which its caller was charged for
      queueMicrotask(() => this.#host.closeIfSpent());
      return;
    }
    // nothing to share: a node answers it after all, at the call's full price
    this.#host.guard(() => {
      const refused = this.send(message, text, seen, hold, false);
      // one sent on is counted once answered (#countOnAnswer): a caller that leaves first pays nothing
      if (refused !== LATER) this.#host.finish(seen, refused);
    })();
  }

  /**
   * Counts `outgoing`'s message once it is answered (pending-calls.ts), or refused with `code` (a move's
   * WRITE_NOT_CONFIRMED: it cost nothing, and its caller's usage and the metrics count the error).
   */
  #countOnAnswer(
    outgoing: UpstreamMessage,
    seen: MessageSeen,
    hold: QuotaHold | undefined,
    writes: boolean,
  ): typeof LATER {
    // once: a message sent again (move.ts) carries the same count, and each of its calls may end it
    let counted = false;
    const sent = outgoing.calls;
    outgoing.writesLost = (lost) => {
      // a batch's writes a move could not confirm, its reads sent again: they cost nothing, and are errors
      seen.units = Math.max(0, seen.units - this.#host.unitsOf(lost));
      hold?.settle(seen.units);
      seen.refused += lost.length;
      if (seen.batch !== undefined)
        seen.batch = {
          ...seen.batch,
          codes: [...seen.batch.codes, ...lost.map(() => "WRITE_NOT_CONFIRMED")],
          parts: this.#host.partsOf(sent.filter((call) => !lost.includes(call))),
        };
      this.#host.failed({ ...seen, code: "WRITE_NOT_CONFIRMED" });
    };
    outgoing.whenAnswered = (ended, failedHere, archived) => {
      outgoing.whenAnswered = undefined;
      if (counted) return;
      counted = true;
      // left unanswered as the gateway closed the connection: a write may have reached its node, a read
      // ends as the close's cause said (connection.ts `#finish`); the caller's leaving is its own
      const code = writes && ended !== undefined && ended !== "CLIENT_CLOSED" ? "WRITE_NOT_CONFIRMED" : ended;
      if (code === undefined && failedHere !== undefined) this.#failedHere(seen, hold, sent, failedHere);
      // answered by the archive nodes: priced as theirs, as over HTTP; whoever answered, the hold (at the
      // archive's price for a read they may answer) comes to what it cost
      if (code === undefined) {
        if (archived !== undefined) seen.units += this.#host.archiveExtraOf(archived);
        hold?.settle(seen.units);
      }
      if (code !== undefined) {
        seen.code = code;
        seen.units = 0;
        hold?.settle(0);
        // a caller who left is no failure of the gateway's
        if (code !== "CLIENT_CLOSED") this.#host.failed(seen);
      }
      this.#host.finish(seen, undefined);
    };
    return LATER;
  }

  /**
   * Calls answered with the gateway's own error (ARCHIVE_REQUIRED, an answer over the cap, a bridged node's
   * failure): they cost nothing and count as that error, as over HTTP.
   */
  #failedHere(
    seen: MessageSeen,
    hold: QuotaHold | undefined,
    sent: readonly PassedCall[],
    failed: readonly FailedHere[],
  ): void {
    const calls = failed.map((f) => f.call);
    seen.units = Math.max(0, seen.units - this.#host.unitsOf(calls));
    hold?.settle(seen.units);
    seen.refused += calls.length;
    if (seen.batch === undefined) {
      seen.code = failed[0]?.code;
      if (seen.code !== undefined && resultOf(seen.code, 0) !== "client") this.#host.failed(seen);
    } else
      seen.batch = {
        ...seen.batch,
        codes: [...seen.batch.codes, ...failed.map((f) => f.code)],
        parts: this.#host.partsOf(sent.filter((call) => !calls.includes(call))),
      };
  }

  /** An answer from the cache, or one node answer shared, costs what the plan says (its cachedShare), as over HTTP. */
  #cachedPrice(seen: MessageSeen, hold: QuotaHold | undefined): void {
    const share = this.#host.cachedShare;
    if (share === 1) return;
    seen.units = Math.round(seen.units * share);
    hold?.settle(seen.units);
  }

  /** A batch whose calls `checked` refused here (an id in flight, a full connection): their codes, and the rest's methods. */
  #refusedHere(
    batch: NonNullable<MessageSeen["batch"]>,
    message: Charged<CheckedMessage>,
    checked: readonly Checked[],
    passed: readonly PassedCall[],
  ): NonNullable<MessageSeen["batch"]> {
    const codes = [...batch.codes];
    checked.forEach((call, i) => {
      if (!call.ok && message.checked[i]?.ok === true) codes.push(call.code);
    });
    return { ...batch, codes, parts: this.#host.partsOf(passed) };
  }

  /** A message none of whose calls went: it costs nothing, and a single call's refusal is its code. */
  #unsent(seen: MessageSeen, hold: QuotaHold | undefined, code: ErrorCode): void {
    if (seen.calls === 1) seen.code = code;
    seen.units = 0;
    hold?.settle(0);
  }

  /** A call whose id, by its value, is still waiting for its answer on this connection: refused. */
  /** Whether a call with this id waits for its answer: sent to the node, or waiting on another's call. */
  #waiting(id: string): boolean {
    return this.#host.pending.get(id) !== undefined || this.#followingIds.has(idKey(id));
  }

  #idInFlight(checked: PassedCall): Checked {
    return no(this.#host.rules, "INVALID_REQUEST", checked.call, {
      reason: "a call with this id is still waiting for its answer on this connection",
    });
  }

  /** Reserves in-flight and subscription slots at the moment a call is sent, so a burst cannot overshoot. */
  #admit(checked: Checked, message: UpstreamMessage, pending: Pending[]): Checked {
    if (!checked.ok) return checked;
    if (checked.access === "websocket") {
      this.#holdsState = true;
      this.#host.stateful();
    }
    if (checked.id === undefined) {
      // A subscribe sent as a notification has no answer, so no id to count, to make again after a move, or
      // for the client to cancel; a node may make it all the same (one per message, past maxSubscriptions).
      if (checked.access !== "subscribe") return checked;
      return no(this.#host.rules, "INVALID_REQUEST", checked.call, {
        reason: "a subscribe call needs an id: the subscription's id comes in its answer",
      });
    }
    // Its answer could not be told from the other's: the node's answers carry the id alone, and a call the
    // cache missed would keep the other's answer as its own, for every caller of the label.
    const id = idKey(checked.id);
    if (this.#waiting(checked.id) || pending.some((p) => idKey(p.call.id) === id))
      return this.#idInFlight(checked);
    const limits = this.#host.limits.ws;
    // calls waiting on another's identical call hold slots too (#lookup): they wait for answers as these do
    if (this.#host.pending.size + this.#following + pending.length >= limits.maxInFlight) {
      return no(this.#host.rules, "TOO_MANY_IN_FLIGHT", checked.call, { maxInFlight: limits.maxInFlight });
    }
    if (checked.access === "subscribe") {
      if (this.#host.remembered.size + this.#host.pending.reservedSubscriptions >= limits.maxSubscriptions) {
        return no(this.#host.rules, "TOO_MANY_SUBSCRIPTIONS", checked.call, {
          maxSubscriptions: limits.maxSubscriptions,
        });
      }
      this.#host.pending.reserveSubscription();
    }
    const kind = checked.access === "subscribe" || checked.access === "unsubscribe" ? checked.access : "call";
    const { remembered } = this.#host;
    const target = kind === "unsubscribe" ? remembered.named(paramsOf(checked)) : undefined;
    pending.push({
      kind,
      call: checked,
      message,
      write: this.#host.policy.writes.has(checked.method),
      refusedWrite: this.#host.refusedWrite,
      target,
      shadowed:
        kind === "unsubscribe" && target === undefined ? remembered.shadowed(paramsOf(checked)) : undefined,
    });
    return checked;
  }

  /** The message from its calls, each unsubscribe naming its subscription by the id the node uses. */
  build(calls: readonly PassedCall[], batch: boolean): string {
    const texts = calls.map((call) => {
      const entry = call.id === undefined ? undefined : this.#host.pending.get(call.id);
      const target = entry?.target;
      const params = call.call.members.get("params");
      if (params !== undefined && entry?.shadowed !== undefined)
        return call.withParams(params.replace(...entry.shadowed));
      if (target === undefined || params === undefined || target.upstreamId === target.clientId)
        return call.json;
      return call.withParams(params.replace(target.clientId, target.upstreamId));
    });
    return batch ? `[${texts.join(",")}]` : (texts[0] as string);
  }
}

/** A call's params, whatever their shape. */
export function paramsOf(call: PassedCall): unknown {
  const value = call.call.value;
  return typeof value === "object" && value !== null ? (value as { params?: unknown }).params : undefined;
}
