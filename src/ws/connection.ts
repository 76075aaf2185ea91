import type { RawData, WebSocket } from "ws";
import type { GatewayConfig, Limits } from "../config/types.js";
import { errorBody, rpcErrorJson } from "../errors/respond.js";
import { type ErrorCode, GatewayError } from "../errors/table.js";
import {
  type CallRules,
  type Checked,
  type PassedCall,
  refuse,
  sendableAsReceived,
} from "../jsonrpc/check.js";
import { mergeBatchAnswer } from "../jsonrpc/merge.js";
import { type CheckedMessage, checkMessage } from "../jsonrpc/message.js";
import { scanMembers } from "../jsonrpc/scan.js";
import type { UsageRecorder } from "../keys/usage.js";
import type { GatewayMetrics } from "../metrics/gateway-metrics.js";
import type { ErrorBoundary } from "../pipeline/boundary.js";
import type { Charged, Mounted, Stages } from "../pipeline/stages.js";
import type { JsonRpcPolicy } from "../registry/types.js";
import type { Upstream } from "../upstream/upstreams.js";
import { CLOSE } from "./close-codes.js";
import { backfillEvents, deliver, type FillContext, recordStart } from "./gap-fill.js";
import { GatewayCalls } from "./gateway-calls.js";
import { RememberedSubscriptions, type Subscription } from "./subscriptions.js";

/** Opens an upstream socket on a node of the connection's group that is in rotation (upgrade.ts). */
export type Reconnect = (
  wanted: () => boolean,
  callback: (error: GatewayError | undefined, socket?: WebSocket, upstream?: Upstream) => void,
) => void;

export interface ConnectionOptions {
  readonly stages: Stages;
  /** Where an unexpected error becomes a logged INTERNAL answer (pipeline/boundary.ts). */
  readonly boundary: ErrorBoundary;
  /** The connection's stage 3 value, from its upgrade. */
  readonly mounted: Mounted;
  readonly support: GatewayConfig["support"];
  readonly limits: Limits;
  readonly metrics: GatewayMetrics | undefined;
  readonly usage: UsageRecorder | undefined;
  readonly reconnect: Reconnect;
  readonly onClose: () => void;
}

/** A connection moves at most this many times within the window; once more and it is closed with 1014. */
const MAX_MOVES = 3;
const MOVE_WINDOW_MS = 60_000;

/** A client message sent upstream, or waiting to be while the connection moves. */
interface Outgoing {
  /** Its text as it goes out; undefined when it must be built at sending (an unsubscribe is rewritten). */
  text: string | undefined;
  calls: readonly PassedCall[];
  readonly batch: boolean;
  sent: boolean;
}

/** A call sent upstream and not answered yet. */
interface Pending {
  readonly kind: "call" | "subscribe" | "unsubscribe";
  readonly call: PassedCall;
  readonly message: Outgoing;
  /** It submits something (registry `writes`): never sent to a second node. */
  readonly write: boolean;
  /** An unsubscribe's subscription. */
  readonly target: Subscription | undefined;
}

/**
 * One client connection and its upstream socket. Both directions are handled synchronously in arrival
 * order, so order is preserved, and notifications are passed on the moment they arrive. Every client
 * message passes stages 4, 5 and 7 of the pipeline (pipeline/stages.ts), with the same checks as over HTTP.
 *
 * The connection remembers its subscriptions. When its upstream socket is lost (the node closed it or
 * died, or the prober took the node out of rotation), it moves: it opens a socket on a node in rotation,
 * makes each subscription again, and from then on rewrites the new node's ids to the ones the client
 * was given, filling the gap a move leaves (gap-fill.ts). Calls in flight are sent again, except writes,
 * which get WRITE_NOT_CONFIRMED. A connection holding node state (registry `pinned` subscriptions, or
 * WebSocket-only calls) cannot move and is closed with 1014, as when no node takes it in time.
 */
export class Connection {
  readonly #client: WebSocket;
  #upstream: WebSocket | undefined;
  #node: Upstream;
  readonly #options: ConnectionOptions;
  readonly #rules: CallRules;
  readonly #policy: JsonRpcPolicy;
  readonly #label: string;
  /** Raw id token of each call sent upstream and not answered yet. */
  readonly #pending = new Map<string, Pending>();
  readonly #remembered: RememberedSubscriptions;
  readonly #calls: GatewayCalls;
  readonly #fill: FillContext;
  #reservedSubscriptions = 0;
  /** Batches with refused calls: the node's answer to the rest is merged with the refusals. */
  readonly #partialBatches: { ids: Set<string>; refused: string[] }[] = [];
  /** While moving: client messages waiting for the new socket, in order. */
  #waiting: Outgoing[] | undefined;
  /** A WebSocket-only call went upstream: the node holds state for this connection. */
  #stateful = false;
  /** When the connection last moved, within MOVE_WINDOW_MS. */
  #moves: number[] = [];
  #alive = true;
  #closed = false;
  readonly #ping: NodeJS.Timeout;
  #idle: NodeJS.Timeout;

  constructor(client: WebSocket, upstream: WebSocket, node: Upstream, options: ConnectionOptions) {
    this.#client = client;
    this.#node = node;
    this.#options = options;
    const { mounted } = options;
    this.#label = mounted.admitted.endpoint.label;
    this.#policy = mounted.mount.policy.jsonrpc as JsonRpcPolicy;
    this.#rules = {
      policy: this.#policy,
      plan: mounted.admitted.principal?.plan,
      support: options.support,
      transport: "websocket",
    };
    this.#remembered = new RememberedSubscriptions(this.#policy.subscriptions);
    this.#calls = new GatewayCalls((text) => this.#upstream?.send(text));
    this.#fill = {
      calls: this.#calls,
      idMember: this.#policy.subscriptions?.idMember ?? "subscription",
      head: mounted.mount.head,
      send: (text) => this.#toClient(text, false),
    };
    client.on(
      "message",
      this.#guard((data: RawData) => this.#fromClient(data)),
    );
    client.on("pong", () => {
      this.#alive = true;
    });
    client.on(
      "close",
      this.#guard(() => this.#end()),
    );
    client.on(
      "error",
      this.#guard(() => this.#end()),
    );
    this.#attach(upstream);
    this.#ping = setInterval(
      this.#guard(() => this.#heartbeat()),
      options.limits.ws.pingIntervalMs,
    );
    this.#idle = this.#idleTimer();
  }

  /** The node the connection's upstream socket is on. */
  get node(): Upstream {
    return this.#node;
  }

  /** Open subscriptions on this connection, for the metrics. */
  get subscriptionCount(): number {
    return this.#remembered.size;
  }

  /** Closes both sides with one code, for shutdown (1001) and revocation. */
  close(code: number, reason: string): void {
    if (this.#closed) return;
    this.#client.close(code, reason);
    this.#upstream?.close(code === CLOSE.GOING_AWAY ? CLOSE.GOING_AWAY : CLOSE.NORMAL, reason);
    this.#finish();
  }

  /** The prober took the connection's node out of rotation: a node that hangs keeps its socket open. */
  nodeFailed(): void {
    this.#lose("out of rotation");
  }

  #attach(socket: WebSocket): void {
    this.#upstream = socket;
    // A lost socket's late events are ignored: only the current one speaks for the connection.
    socket.on(
      "message",
      this.#guard((data: RawData, isBinary: boolean) => {
        if (socket === this.#upstream) this.#fromUpstream(data, isBinary);
      }),
    );
    socket.on(
      "close",
      this.#guard((code: number) => {
        if (socket === this.#upstream) this.#lose(`closed (${code})`);
      }),
    );
    socket.on(
      "error",
      this.#guard(() => {
        if (socket === this.#upstream) this.#lose("failed");
      }),
    );
  }

  /**
   * A listener whose throw breaks this connection only: the error goes through the pipeline's boundary,
   * and the connection is closed with 1011. Without it, a throw in a socket's listener would reach the
   * process's uncaught-exception handler and end every other connection and request with it.
   */
  #guard<A extends unknown[]>(listener: (...args: A) => void): (...args: A) => void {
    return (...args) => {
      try {
        listener(...args);
      } catch (error) {
        this.#broke(error);
      }
    };
  }

  /** An unexpected error: logged INTERNAL, answered to the message it broke if there is one, and the connection closed with 1011. */
  #broke(error: unknown, replyId?: string): void {
    const caught = this.#options.boundary.caught(error, "websocket message", {
      label: this.#label,
      upstream: this.#node.name,
    });
    if (replyId !== undefined) this.#toClient(errorBody(caught, "jsonrpc", replyId), false);
    this.close(CLOSE.INTERNAL, "internal error");
  }

  #fromClient(data: RawData): void {
    this.#touch();
    const text = toText(data);
    const { stages, mounted, limits } = this.#options;
    let replyId = "null";
    let answer: string | undefined;
    let method = "other";
    let code: ErrorCode | undefined;
    let calls = 1;
    let refused = 0;
    try {
      const message = checkMessage(text, this.#rules, limits); // 4
      replyId = message.replyId;
      calls = message.checked.length;
      refused = message.checked.filter((c) => !c.ok).length;
      const only = message.batch ? undefined : message.checked[0];
      method = message.batch ? "batch" : only?.ok ? only.method : "other";
      if (only !== undefined && !only.ok) code = only.code;
      const charged = stages.chargeRate(mounted, message); // 5
      answer = this.#send(charged, text); // 7
    } catch (error) {
      if (!(error instanceof GatewayError)) {
        this.#broke(error, replyId);
        return;
      }
      code = error.code;
      answer = errorBody(error, "jsonrpc", replyId);
    }
    const { principal } = mounted.admitted;
    this.#options.metrics?.message(this.#label, method, code, principal !== undefined);
    if (principal !== undefined)
      this.#options.usage?.record(principal.keyId, this.#label, calls, code === undefined ? refused : calls);
    if (answer !== undefined) this.#toClient(answer, false);
  }

  /** Sends what passed upstream and returns the answer for what did not. */
  #send(charged: Charged<CheckedMessage>, text: string): string | undefined {
    const { message } = charged;
    const outgoing: Outgoing = { text: undefined, calls: [], batch: message.batch, sent: false };
    const pending: Pending[] = [];
    const checked = message.checked.map((call) => this.#admit(call, outgoing, pending));
    const passed = checked.filter((c): c is PassedCall => c.ok);
    const refused = checked.filter((c) => !c.ok).map((c) => c.json);
    if (passed.length === 0) return message.batch ? `[${refused.join(",")}]` : (checked[0] as Checked).json;
    const rewritten = pending.some(
      (p) => p.target !== undefined && p.target.upstreamId !== p.target.clientId,
    );
    outgoing.calls = passed;
    outgoing.text = rewritten ? undefined : sendableAsReceived(text, checked) ? text : undefined;
    for (const entry of pending) this.#pending.set(entry.call.id as string, entry);
    this.#transmit(outgoing);
    if (refused.length === 0 || !message.batch) return undefined;
    const ids = new Set(passed.flatMap((c) => (c.id !== undefined ? [c.id] : [])));
    // Only notifications went upstream: the node will send nothing to merge into (JSON-RPC 2.0 §6).
    if (ids.size === 0) return `[${refused.join(",")}]`;
    this.#partialBatches.push({ ids, refused });
    return undefined;
  }

  /** Reserves in-flight and subscription slots at the moment a call is sent, so a burst cannot overshoot. */
  #admit(checked: Checked, message: Outgoing, pending: Pending[]): Checked {
    if (!checked.ok) return checked;
    if (checked.access === "websocket") this.#stateful = true;
    if (checked.id === undefined) return checked;
    const limits = this.#options.limits.ws;
    if (this.#pending.size + pending.length >= limits.maxInFlight) {
      return refuse("TOO_MANY_IN_FLIGHT", checked.id, { maxInFlight: limits.maxInFlight });
    }
    if (checked.access === "subscribe") {
      if (this.#remembered.size + this.#reservedSubscriptions >= limits.maxSubscriptions) {
        return refuse("TOO_MANY_SUBSCRIPTIONS", checked.id, { maxSubscriptions: limits.maxSubscriptions });
      }
      this.#reservedSubscriptions++;
      if (this.#remembered.isPinned(checked.method)) this.#stateful = true;
    }
    const kind = checked.access === "subscribe" || checked.access === "unsubscribe" ? checked.access : "call";
    pending.push({
      kind,
      call: checked,
      message,
      write: this.#policy.writes.has(checked.method),
      target: kind === "unsubscribe" ? this.#remembered.named(paramsOf(checked)) : undefined,
    });
    return checked;
  }

  /** Sends a message upstream, or keeps it for the new socket while the connection moves. */
  #transmit(outgoing: Outgoing): void {
    if (this.#waiting !== undefined || this.#upstream === undefined) {
      this.#waiting?.push(outgoing);
      return;
    }
    outgoing.sent = true;
    this.#upstream.send(outgoing.text ?? this.#build(outgoing.calls, outgoing.batch));
  }

  /** The message from its calls, each unsubscribe naming its subscription by the id the node uses. */
  #build(calls: readonly PassedCall[], batch: boolean): string {
    const texts = calls.map((call) => {
      const target = call.id === undefined ? undefined : this.#pending.get(call.id)?.target;
      const params = call.call.members.get("params");
      if (target === undefined || params === undefined || target.upstreamId === target.clientId)
        return call.json;
      return call.withParams(params.replace(target.clientId, target.upstreamId));
    });
    return batch ? `[${texts.join(",")}]` : (texts[0] as string);
  }

  #fromUpstream(data: RawData, isBinary: boolean): void {
    this.#touch();
    // Notifications with nothing pending pass straight through, never decoded: with nothing to watch, or
    // for the connection's only subscription, whose position is read from its last one if a move needs it.
    if (this.#pending.size === 0 && this.#calls.size === 0) {
      const solo = this.#remembered.watching ? this.#remembered.solo() : undefined;
      if (!this.#remembered.watching || solo !== undefined) {
        if (solo !== undefined) solo.unread = Buffer.isBuffer(data) ? data : toText(data);
        this.#toClient(data, isBinary);
        return;
      }
    }
    const text = toText(data);
    const envelopes = scanMembers(text);
    const only = envelopes.length === 1 ? envelopes[0] : undefined;
    if (only !== undefined) {
      const id = only.get("id");
      if (only.has("method") && id === undefined) {
        this.#notification(text, only);
        return;
      }
      if (id !== undefined && this.#calls.settle(id, text, only)) return;
    }
    const answered = this.#settle(envelopes);
    const merged =
      this.#partialBatches.length > 0 && answered.length > 0 ? this.#mergeBatch(text, answered) : undefined;
    this.#toClient(merged ?? data, merged === undefined && isBinary);
  }

  #notification(text: string, members: ReadonlyMap<string, string>): void {
    const found = this.#remembered.notified(members);
    if (found === undefined) this.#toClient(text, false);
    else deliver(found.subscription, found.result, text, this.#fill);
  }

  /** Clears the pending calls this message answers and remembers the subscriptions it confirms. */
  #settle(envelopes: readonly ReadonlyMap<string, string>[]): string[] {
    const ids: string[] = [];
    for (const members of envelopes) {
      const id = members.get("id");
      if (id === undefined || members.has("method")) continue;
      const pending = this.#pending.get(id);
      if (pending === undefined) continue;
      this.#pending.delete(id);
      ids.push(id);
      const result = members.has("error") ? undefined : members.get("result");
      if (pending.kind === "subscribe") {
        this.#reservedSubscriptions--;
        if (result !== undefined) this.#remember(pending.call, result);
      } else if (pending.kind === "unsubscribe" && result !== undefined && result !== "false") {
        this.#remembered.remove(pending.target);
      }
    }
    return ids;
  }

  #remember(call: PassedCall, id: string): void {
    const subscription = this.#remembered.add(
      call.method,
      call.call.members.get("params"),
      paramsOf(call),
      id,
    );
    if (subscription.kind?.events !== undefined) recordStart(subscription, this.#fill);
  }

  #mergeBatch(text: string, answered: readonly string[]): string | undefined {
    const index = this.#partialBatches.findIndex((b) => answered.some((id) => b.ids.has(id)));
    if (index < 0) return undefined;
    const [batch] = this.#partialBatches.splice(index, 1);
    return batch === undefined ? undefined : mergeBatchAnswer(text, batch.refused);
  }

  /**
   * The upstream socket is gone, or its node out of rotation. A connection that can move opens a socket
   * on a node in rotation within `handshakeTimeoutMs`; one that cannot, or finds none, is closed with 1014.
   */
  #lose(why: string): void {
    if (this.#closed || this.#waiting !== undefined) return;
    const lost = this.#upstream;
    this.#upstream = undefined;
    lost?.terminate();
    this.#calls.abandon();
    if (this.#stateful || this.#remembered.pinned || this.#client.readyState !== this.#client.OPEN) {
      this.#closeMoved(`upstream ${why}`);
      return;
    }
    // A node that takes sockets and drops them at once would have the connection move without end.
    const now = performance.now();
    this.#moves = this.#moves.filter((at) => now - at < MOVE_WINDOW_MS);
    if (this.#moves.length >= MAX_MOVES) {
      this.#closeMoved(`upstream ${why}; lost ${MAX_MOVES} times within a minute`);
      return;
    }
    this.#moves.push(now);
    this.#waiting = [];
    const { limits } = this.#options;
    const deadline = setTimeout(
      this.#guard(() => this.#closeMoved(`upstream ${why}; no node took the connection`)),
      limits.ws.handshakeTimeoutMs,
    );
    this.#options.reconnect(
      () => !this.#closed,
      this.#guard((error: GatewayError | undefined, socket?: WebSocket, node?: Upstream) => {
        clearTimeout(deadline);
        if (this.#closed || error !== undefined || socket === undefined || node === undefined) {
          socket?.close();
          this.#closeMoved(`upstream ${why}; no node took the connection`);
          return;
        }
        this.#node = node;
        this.#attach(socket);
        this.#options.metrics?.webSocketMoves.add([this.#label, "moved"]);
        this.#resubscribe();
      }),
    );
  }

  #closeMoved(reason: string): void {
    if (this.#closed) return;
    this.#options.metrics?.webSocketMoves.add([this.#label, "closed"]);
    if (this.#client.readyState === this.#client.OPEN) this.#client.close(CLOSE.BAD_GATEWAY, reason);
    this.#upstream?.close(CLOSE.NORMAL, reason);
    this.#finish();
  }

  /**
   * On the new socket: an unsubscribe that was in flight has done its work (its subscription was on the
   * lost node); every other subscription is made again, and once all are, the calls go out.
   */
  #resubscribe(): void {
    for (const [id, pending] of this.#pending) {
      if (pending.kind !== "unsubscribe" || !pending.message.sent || pending.message.batch) continue;
      this.#pending.delete(id);
      this.#remembered.remove(pending.target);
      this.#toClient(`{"jsonrpc":"2.0","id":${id},"result":true}`, false);
    }
    const subscriptions = this.#remembered.all();
    for (const subscription of subscriptions) subscription.catchUp(this.#fill.idMember);
    let left = subscriptions.length;
    if (left === 0) {
      this.#resume();
      return;
    }
    for (const subscription of subscriptions) {
      this.#calls.call(subscription.method, subscription.params, (answer) => {
        if (this.#closed) return;
        const id = answer?.members.has("error") ? undefined : answer?.members.get("result");
        if (id === undefined) {
          this.#closeMoved("a subscription could not be made again on another node");
          return;
        }
        this.#remembered.rebind(subscription, id);
        if (subscription.kind?.heads !== undefined) subscription.fillNext = true;
        if (subscription.kind?.events !== undefined) backfillEvents(subscription, this.#fill);
        if (--left === 0) this.#resume();
      });
    }
  }

  /**
   * Calls that went to the lost node are sent again, all but writes: a write gets WRITE_NOT_CONFIRMED, in
   * its batch's answer if it had company. Then what the client sent during the move goes, in order.
   */
  #resume(): void {
    const waiting = this.#waiting ?? [];
    this.#waiting = undefined;
    const lost = new Set<Outgoing>();
    for (const pending of this.#pending.values()) if (pending.message.sent) lost.add(pending.message);
    for (const message of lost) this.#sendAgain(message);
    for (const message of waiting) this.#transmit(message);
  }

  #sendAgain(message: Outgoing): void {
    const unanswered = message.calls.filter(
      (c) => c.id !== undefined && this.#pending.get(c.id)?.message === message,
    );
    const writes = unanswered.filter((c) => this.#pending.get(c.id as string)?.write === true);
    const refusals = writes.map((call) => {
      this.#pending.delete(call.id as string);
      return rpcErrorJson("WRITE_NOT_CONFIRMED", call.id as string, {
        reason: "the upstream socket was lost before the node answered; the call was not sent again",
      });
    });
    const reads = unanswered.filter((c) => !writes.includes(c));
    if (reads.length === 0) {
      if (refusals.length > 0)
        this.#toClient(message.batch ? `[${refusals.join(",")}]` : (refusals[0] as string), false);
      return;
    }
    if (refusals.length > 0)
      this.#partialBatches.push({ ids: new Set(reads.map((c) => c.id as string)), refused: refusals });
    const again: Outgoing = {
      text: writes.length === 0 ? message.text : undefined,
      calls: reads,
      batch: message.batch,
      sent: false,
    };
    for (const call of reads) {
      const pending = this.#pending.get(call.id as string);
      if (pending !== undefined) this.#pending.set(call.id as string, { ...pending, message: again });
    }
    this.#transmit(again);
  }

  /** Sends to the client unless it stopped reading: past the buffer bound it is closed, not buffered. */
  #toClient(data: string | RawData, binary: boolean): void {
    if (this.#closed || this.#client.readyState !== this.#client.OPEN) return;
    if (this.#client.bufferedAmount > this.#options.limits.ws.maxBufferedBytes) {
      this.#client.close(CLOSE.POLICY, "send buffer full: the client is not reading");
      // A client that does not read will not read the close frame either.
      setTimeout(() => this.#client.terminate(), 1000).unref();
      this.#end();
      return;
    }
    this.#client.send(data, { binary });
    this.#options.metrics?.webSocketFrames.add([this.#label, "out"]);
  }

  #heartbeat(): void {
    if (!this.#alive) {
      this.#client.terminate();
      return;
    }
    this.#alive = false;
    this.#client.ping();
  }

  #touch(): void {
    this.#idle.refresh();
  }

  #idleTimer(): NodeJS.Timeout {
    return setTimeout(
      this.#guard(() => this.close(CLOSE.NORMAL, "idle timeout")),
      this.#options.limits.ws.idleTimeoutMs,
    );
  }

  /** The client went away (or must): its upstream socket is closed too, so nothing is left half-open. */
  #end(): void {
    if (this.#closed) return;
    const upstream = this.#upstream;
    if (
      upstream !== undefined &&
      (upstream.readyState === upstream.OPEN || upstream.readyState === upstream.CONNECTING)
    )
      upstream.close(CLOSE.NORMAL, "client closed");
    this.#finish();
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#ping);
    clearTimeout(this.#idle);
    this.#calls.abandon();
    this.#options.onClose();
  }
}

function paramsOf(call: PassedCall): unknown {
  const value = call.call.value;
  return typeof value === "object" && value !== null ? (value as { params?: unknown }).params : undefined;
}

function toText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString("utf8");
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.from(data).toString("utf8");
}
