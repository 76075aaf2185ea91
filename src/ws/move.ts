import { type ErrorForm, rpcErrorJson } from "../errors/respond.js";
import type { GatewayError } from "../errors/table.js";
import type { PassedCall } from "../jsonrpc/check.js";
import type { Upstream } from "../upstream/upstreams.js";
import { backfillEvents, type FillContext } from "./gap-fill.js";
import type { GatewayCalls } from "./gateway-calls.js";
import { HeldMessages, upstreamSize } from "./held-messages.js";
import type { NodeSocket } from "./node-socket.js";
import type { PendingCalls, UpstreamMessage } from "./pending-calls.js";
import type { RememberedSubscriptions } from "./subscriptions.js";

/** Opens an upstream socket on a node of the connection's group that is in rotation (open-node-socket.ts). */
export type Reconnect = (
  wanted: () => boolean,
  callback: (error: GatewayError | undefined, socket?: NodeSocket, upstream?: Upstream) => void,
  /** A node not to open on: the connection's own, when the gateway chooses to move it. */
  besides?: Upstream,
) => void;

/** A connection moves at most this many times within the window; once more and it is closed with 1014. */
const MAX_MOVES = 3;
const MOVE_WINDOW_MS = 60_000;

/** What a move needs of its connection (connection.ts). */
export interface MovingConnection {
  readonly pending: PendingCalls;
  readonly remembered: RememberedSubscriptions;
  readonly calls: GatewayCalls;
  readonly fill: FillContext;
  readonly closed: boolean;
  /** The connection's request id, which every refusal on it carries (docs/errors.md). */
  readonly requestId: string | undefined;
  /** The dialect's error shape (nearcore's causes), for the refusals the move writes. */
  readonly errorForm: ErrorForm;
  /** The size cap of a node's answer (`limits.upstream.maxResponseBytes`), which refusals of one name. */
  readonly maxResponseBytes: number;
  /** The new socket, on `node`, is the connection's upstream socket from now on. */
  attach(socket: NodeSocket, node: Upstream): void;
  /** Sends a message on the upstream socket. */
  transmit(message: UpstreamMessage): void;
  toClient(text: string): void;
  /** A message none of whose calls goes on (its writes refused): its span, if traced, ends with `code`. */
  refused(message: UpstreamMessage, code: "WRITE_NOT_CONFIRMED" | "UPSTREAM_RESPONSE_TOO_LARGE"): void;
  /** Closes the connection with 1014: it could not move. */
  closeMoved(reason: string): void;
  /**
   * Calls back once the new node has reached the head the label served, or after about one block: the
   * calls wait for it (group.ts `whenCaughtUp`).
   */
  caughtUp(callback: () => void): void;
  /** The move is done, its calls sent on: the node it landed on may have left rotation meanwhile. */
  settled(): void;
  /** Wraps a callback so that what it throws breaks this connection only (connection.ts's guard). */
  guard<A extends unknown[]>(listener: (...args: A) => void): (...args: A) => void;
}

/**
 * How a connection moves to another node when its upstream socket is lost (the node closed it or died,
 * or the prober took the node out of rotation): it opens a socket on a node in rotation within
 * `handshakeTimeoutMs`, makes each remembered subscription again (its ids rewritten both ways from then
 * on, the gap filled: gap-fill.ts), sends again the calls that were in flight, except writes, which get
 * WRITE_NOT_CONFIRMED, then what the client sent meanwhile, in order. A connection that cannot move, or
 * finds no node in time, or moved MAX_MOVES times within a minute, is closed with 1014.
 */
export class ConnectionMove {
  readonly #connection: MovingConnection;
  readonly #reconnect: Reconnect;
  readonly #handshakeTimeoutMs: number;
  readonly #moved: () => void;
  /** When the connection last moved, within MOVE_WINDOW_MS. */
  #moves: number[] = [];
  /** When it moved of the gateway's own accord (untilChoice), within the last minute. */
  #chosen: number[] = [];
  /** While moving: client messages waiting for the new socket, in order. */
  readonly #waiting = new HeldMessages<UpstreamMessage>(upstreamSize);
  /** The move has its new socket and has not resumed the connection's calls yet. */
  #onNewSocket = false;
  /** Counts the moves begun: a wait for a node the connection has left since ends with nothing. */
  #attempt = 0;

  constructor(
    connection: MovingConnection,
    reconnect: Reconnect,
    handshakeTimeoutMs: number,
    moved: () => void,
  ) {
    this.#connection = connection;
    this.#reconnect = reconnect;
    this.#handshakeTimeoutMs = handshakeTimeoutMs;
    this.#moved = moved;
  }

  /**
   * How long until the gateway may move the connection of its own accord again: 0 when it may now. At most
   * MAX_MOVES such moves a minute, so that a better node whose sockets do not open cannot have it move back
   * and forth without end.
   */
  untilChoice(): number {
    const now = performance.now();
    this.#chosen = this.#chosen.filter((at) => now - at < MOVE_WINDOW_MS);
    const oldest = this.#chosen[0];
    return this.#chosen.length < MAX_MOVES || oldest === undefined ? 0 : MOVE_WINDOW_MS - (now - oldest);
  }

  /** Whether a move is under way: client messages wait for its new socket. */
  get moving(): boolean {
    return this.#waiting.holding;
  }

  /**
   * Whether the move has its new socket (it remakes the subscriptions there, or waits for the node to reach
   * the label's head): losing that socket starts the move again; one lost while the move looks for a node
   * is ignored, as the move is under way.
   */
  get onNewSocket(): boolean {
    return this.#onNewSocket;
  }

  /** The new socket was lost: what this move did on it ends with nothing, and the next move begins anew. */
  socketLost(): void {
    this.#attempt++;
    this.#onNewSocket = false;
  }

  /** Keeps a client message for the new socket while moving; false once what is kept has passed `bound`. */
  hold(message: UpstreamMessage, bound: number): boolean {
    return !this.moving || this.#waiting.hold(message, bound);
  }

  /**
   * Moves the connection off its lost socket: `why` it was lost, for the close reason if it cannot move.
   * A move the gateway chose (`chosen`: its node answers, and another serves better) comes with the socket
   * it opened on that node first (connection.ts `nodeLeftRotation`), and is not a loss: it does not count
   * towards the losses that close a connection. `avoid`: a node not to open the new socket on (one whose
   * socket went silent).
   */
  start(
    why: string,
    chosen?: { readonly socket: NodeSocket; readonly node: Upstream },
    avoid?: Upstream,
  ): void {
    const connection = this.#connection;
    // A node that takes sockets and drops them at once would have the connection move without end.
    const now = performance.now();
    this.#moves = this.#moves.filter((at) => now - at < MOVE_WINDOW_MS);
    // a socket closed for a caller's answer over the size cap is no sign of the node's (`oversized`)
    const counted = chosen === undefined && !this.#connection.pending.oversizedInFlight();
    if (counted && this.#moves.length >= MAX_MOVES) {
      connection.closeMoved(`upstream ${why}; lost ${MAX_MOVES} times within a minute`);
      return;
    }
    // a move begun again as it waited for its node to catch up keeps what the client sent meanwhile
    this.#waiting.start();
    this.#onNewSocket = false;
    this.#attempt++;
    if (chosen !== undefined) {
      this.#chosen.push(now);
      connection.attach(chosen.socket, chosen.node);
      this.#onNewSocket = true;
      this.#moved();
      this.#resubscribe();
      return;
    }
    if (counted) this.#moves.push(now);
    const deadline = setTimeout(
      connection.guard(() => connection.closeMoved(`upstream ${why}; no node took the connection`)),
      this.#handshakeTimeoutMs,
    );
    this.#reconnect(
      () => !connection.closed,
      connection.guard((error: GatewayError | undefined, socket?: NodeSocket, node?: Upstream) => {
        clearTimeout(deadline);
        if (connection.closed || error !== undefined || socket === undefined || node === undefined) {
          socket?.close();
          connection.closeMoved(`upstream ${why}; no node took the connection`);
          return;
        }
        connection.attach(socket, node);
        this.#onNewSocket = true;
        this.#moved();
        this.#resubscribe();
      }),
      avoid,
    );
  }

  /**
   * On the new socket: an unsubscribe that was in flight has done its work (its subscription was on the
   * lost node), true; one naming no subscription the client held is false, as a node answers an id it does
   * not know. Every other subscription is made again, and once all are, the calls go out.
   */
  #resubscribe(): void {
    const { pending, remembered, calls, fill } = this.#connection;
    for (const entry of [...pending.values()]) {
      const id = entry.call.id as string;
      if (entry.kind !== "unsubscribe" || !entry.message.sent) continue;
      remembered.remove(entry.target);
      // one in a batch is answered inside the batch's answer (#sendAgain)
      if (entry.message.batch) continue;
      pending.delete(id);
      this.#connection.toClient(`{"jsonrpc":"2.0","id":${id},"result":${entry.target !== undefined}}`);
      // answered: its message is counted now, as a node's answer would have had it counted
      entry.message.whenAnswered?.();
    }
    const subscriptions = remembered.all();
    for (const subscription of subscriptions) subscription.catchUp(fill.idMember);
    let left = subscriptions.length;
    if (left === 0) {
      this.#resumeOnceCaughtUp();
      return;
    }
    for (const subscription of subscriptions) {
      const attempt = this.#attempt;
      calls.call(subscription.method, subscription.params, (answer) => {
        // the new socket was lost before it answered: another move makes the subscriptions again
        if (attempt !== this.#attempt) return;
        if (this.#connection.closed) return;
        const id = answer?.members.has("error") ? undefined : answer?.members.get("result");
        if (id === undefined) {
          this.#connection.closeMoved("a subscription could not be made again on another node");
          return;
        }
        remembered.rebind(subscription, id);
        subscription.afterMove = true;
        if (subscription.kind?.heads !== undefined) subscription.fillNext = true;
        if (subscription.kind?.events !== undefined) backfillEvents(subscription, fill);
        if (--left === 0) this.#resumeOnceCaughtUp();
      });
    }
  }

  /**
   * The calls go once the new node has reached the head the label served, or after about one block: on a
   * node behind it, a read at the head would answer below what the caller saw on the node it left. Client
   * messages wait meanwhile, as during the move.
   */
  #resumeOnceCaughtUp(): void {
    const connection = this.#connection;
    const attempt = this.#attempt;
    connection.caughtUp(
      connection.guard(() => {
        // the new socket was lost meanwhile: another move is under way, and resumes itself
        if (attempt !== this.#attempt) return;
        this.#onNewSocket = false;
        if (!connection.closed) this.#resume();
      }),
    );
  }

  /**
   * Calls that went to the lost node are sent again, all but writes: a write gets WRITE_NOT_CONFIRMED, in
   * its batch's answer if it had company. Then what the client sent during the move goes, in order.
   */
  #resume(): void {
    const waiting = this.#waiting.release();
    for (const message of this.#connection.pending.sentAndUnanswered()) this.#sendAgain(message);
    for (const message of waiting) this.#connection.transmit(message);
    this.#connection.settled();
  }

  #sendAgain(message: UpstreamMessage): void {
    const { pending } = this.#connection;
    const unanswered = pending.unanswered(message);
    // alone in flight when the node's socket closed for an answer past four times the size cap: the answer
    // is this message's, and would be as large on any node; its calls get UPSTREAM_RESPONSE_TOO_LARGE
    if (message.oversized === true) {
      this.#tooLarge(message, unanswered);
      return;
    }
    // no node got it (a bridge's node refused the connection): it goes whole, its writes too, as an HTTP
    // write goes on to the next node when the first refused the connection
    if (message.undelivered === true) {
      message.undelivered = false;
      this.#connection.transmit(message);
      return;
    }
    // not sent again: writes (WRITE_NOT_CONFIRMED), and a batch's unsubscribes, whose subscriptions were
    // on the lost node (true, or false for an id the client never held, as a lone one's in #resubscribe)
    const settled = unanswered.filter((c) => {
      const entry = pending.get(c.id as string);
      return entry?.write === true || entry?.kind === "unsubscribe";
    });
    const lostWrites = settled.filter((c) => pending.get(c.id as string)?.write === true);
    const writes = lostWrites.length;
    const refusals = settled.map((call) => {
      const entry = pending.get(call.id as string);
      pending.delete(call.id as string);
      if (entry?.kind === "unsubscribe")
        return `{"jsonrpc":"2.0","id":${call.id},"result":${entry.target !== undefined}}`;
      return rpcErrorJson(
        "WRITE_NOT_CONFIRMED",
        call.id as string,
        { reason: "the upstream socket was lost before the node answered; the call was not sent again" },
        this.#connection.requestId,
        this.#connection.errorForm,
      );
    });
    const reads = unanswered.filter((c) => !settled.includes(c));
    if (reads.length === 0) {
      if (refusals.length > 0) {
        this.#connection.toClient(message.batch ? `[${refusals.join(",")}]` : (refusals[0] as string));
        if (writes > 0) this.#connection.refused(message, "WRITE_NOT_CONFIRMED");
        else message.whenAnswered?.();
      }
      return;
    }
    if (refusals.length > 0) pending.holdRefusals(new Set(reads.map((c) => c.id as string)), refusals);
    if (writes > 0) message.writesLost?.(lostWrites);
    // its text goes again only when it holds nothing but these reads: a write sent without an id (a
    // notification, never answered, so never pending) or a call answered already would go a second time
    const again: UpstreamMessage = {
      text: reads.length === message.calls.length ? message.text : undefined,
      calls: reads,
      batch: message.batch,
      sent: false,
    };
    for (const call of reads) pending.resend(call.id as string, again);
    this.#connection.transmit(again);
  }

  /** The message's unanswered calls answered UPSTREAM_RESPONSE_TOO_LARGE by their ids, as an HTTP call's. */
  #tooLarge(message: UpstreamMessage, unanswered: readonly PassedCall[]): void {
    const { pending, requestId, errorForm, maxResponseBytes } = this.#connection;
    const answers = unanswered.map((call) => {
      pending.delete(call.id as string);
      return rpcErrorJson(
        "UPSTREAM_RESPONSE_TOO_LARGE",
        call.id as string,
        { maxBytes: maxResponseBytes },
        requestId,
        errorForm,
      );
    });
    if (answers.length === 0) return;
    this.#connection.toClient(message.batch ? `[${answers.join(",")}]` : (answers[0] as string));
    this.#connection.refused(message, "UPSTREAM_RESPONSE_TOO_LARGE");
  }
}
