import type { RawData, WebSocket } from "ws";
import { errorBody, errorFormOf, jsonRpcStyle, rpcErrorJson } from "../errors/respond.js";
import type { ErrorCode } from "../errors/table.js";
import { callRulesOf } from "../jsonrpc/call-rules.js";
import type { PassedCall } from "../jsonrpc/check.js";
import { TokenLifetime } from "../keys/token-lifetime.js";
import { callsUnits } from "../plans/compute-units.js";
import type { JsonRpcPolicy } from "../registry/types.js";
import { endMessage } from "../tracing/span-ends.js";
import type { Upstream } from "../upstream/upstreams.js";
import { CLOSE } from "./close-codes.js";
import { type ConnectionActions, ConnectionHost, type ConnectionState, methodOf } from "./connection-host.js";
import type { ConnectionOptions } from "./connection-options.js";
import type { FillContext } from "./gap-fill.js";
import { GatewayCalls } from "./gateway-calls.js";
import { holdsPoint, readsElsewhere, waitsForHead } from "./head-reads.js";
import { HeldMessages, upstreamSize } from "./held-messages.js";
import { ClientLiveness } from "./liveness.js";
import { MessageIntake } from "./message-intake.js";
import { MessageSender } from "./message-sender.js";
import { ConnectionMove } from "./move.js";
import { NodeChoice } from "./node-choice.js";
import { NodeIntake } from "./node-intake.js";
import type { NodeSocket } from "./node-socket.js";
import { PendingCalls, type UpstreamMessage } from "./pending-calls.js";
import { RememberedSubscriptions } from "./subscriptions.js";

/**
 * One client connection and its upstream socket. Both directions are handled synchronously in arrival
 * order, so order is preserved, and notifications are passed on the moment they arrive. Every client
 * message passes stages 4 and 5 of the pipeline (pipeline/stages.ts) in its intake (message-intake.ts),
 * with the same checks as over HTTP, and stage 7 in its sender.
 *
 * The connection remembers its subscriptions (subscriptions.ts) and keeps a ledger of its calls in flight
 * (pending-calls.ts); its messages go toward the node through its sender (message-sender.ts), which answers
 * from the cache and waits on calls in flight first, and what its node sends comes in through its node
 * intake (node-intake.ts). When its upstream socket is lost it moves to another
 * node (move.ts); a connection holding node state (registry `pinned` subscriptions, or WebSocket-only calls)
 * cannot, and is closed with 1014. Its parts read and change its state, and ask it to act (its public
 * methods besides `close`, `nodeFailed` and `nodeLeftRotation`), through its host (connection-host.ts).
 */
export class Connection implements ConnectionActions {
  /** What its parts read and change through its host (connection-host.ts). */
  readonly #s: ConnectionState;
  #upstream: NodeSocket | undefined;
  readonly #fill: FillContext;
  readonly #sender: MessageSender;
  /**
   * Messages held, in order, while the node reaches the head the label served (head-reads.ts
   * `waitsForHead`): what follows a held call must not overtake it.
   */
  readonly #untilHead = new HeldMessages<UpstreamMessage>(upstreamSize);
  /**
   * A call that keeps state at a point went to the node (head-reads.ts `holdsPoint`: a ledger state
   * acquired): the connection's reads are answered there, by its node alone.
   */
  #atPoint = false;
  /** When it leaves a node that still answers for a better one. */
  readonly #choice: NodeChoice;
  readonly #intake: MessageIntake;
  /** What the node sends the connection (node-intake.ts). */
  readonly #nodeIntake: NodeIntake;
  readonly #liveness: ClientLiveness;
  /** The node's socket answered the last ping sent to it (or none was sent since it was attached). */
  #nodeAnswersPing = true;
  /** Closes the connection when the JWT it opened with stops being valid. */
  #token: TokenLifetime | undefined = undefined;

  constructor(client: WebSocket, upstream: NodeSocket, node: Upstream, options: ConnectionOptions) {
    const { mounted } = options;
    const policy = mounted.mount.policy.jsonrpc as JsonRpcPolicy;
    this.#s = {
      client,
      options,
      policy,
      label: mounted.admitted.endpoint.label,
      // a range call goes to the connection's node as one: one too wide for it is refused
      rules: callRulesOf(mounted, "websocket", options.support, (call) =>
        options.stages.callRefusal(mounted, call),
      ),
      pending: new PendingCalls(),
      remembered: new RememberedSubscriptions(policy.subscriptions),
      calls: new GatewayCalls((text) => this.#upstream?.send(text)),
      node,
      closed: false,
      stateful: false,
      lostNode: undefined,
      move: undefined,
    };
    this.#fill = {
      calls: this.#s.calls,
      idMember: this.#s.policy.subscriptions?.idMember ?? "subscription",
      head: mounted.mount.head,
      send: (text) => this.toClient(text, false),
      widestRange: (method) => {
        const rule = policy.reads?.ranges?.[method];
        const own = options.blockRanges?.[method];
        const split = own?.splitAbove ?? rule?.splitAbove;
        const refuse = own?.refuseAbove ?? rule?.refuseAbove;
        return split === undefined ? refuse : Math.min(split, refuse ?? split);
      },
      failed: (reason) => this.#closeMoved(reason),
    };
    const host = new ConnectionHost(this.#s, this);
    this.#choice = new NodeChoice(host);
    this.#sender = new MessageSender(host);
    this.#intake = new MessageIntake(host);
    this.#nodeIntake = new NodeIntake(host, options, policy, this.#fill);
    host.parts = {
      sender: this.#sender,
      intake: this.#intake,
      nodeIntake: this.#nodeIntake,
      choice: this.#choice,
    };
    client.on(
      "message",
      this.guard((data: RawData) => {
        this.#liveness.touch();
        this.#intake.receive(data);
      }),
    );
    client.on(
      "close",
      this.guard(() => this.#end()),
    );
    client.on(
      "error",
      this.guard(() => this.#end()),
    );
    this.#attach(upstream);
    this.#liveness = new ClientLiveness(
      client,
      options.limits.ws,
      (listener) => this.guard(listener),
      // one holding a subscription waits for its node's news (a quiet contract's logs), while its client
      // answers the pings: it is not idle
      () => (this.#s.remembered.size > 0 ? this.#liveness.touch() : this.close(CLOSE.NORMAL, "idle timeout")),
      () => this.#pingNode(),
    );
    const validUntil = mounted.admitted.tokenValidUntilMs;
    if (validUntil !== undefined)
      this.#token = new TokenLifetime(
        validUntil,
        this.guard(() => this.close(CLOSE.POLICY, "the JWT expired: connect again with a new one")),
      );
  }

  /** The node the connection's upstream socket is on. */
  get node(): Upstream {
    return this.#s.node;
  }

  /** Open subscriptions on this connection, for the metrics. */
  get subscriptionCount(): number {
    return this.#s.remembered.size;
  }

  /** Closes both sides with one code, for shutdown (1001) and revocation. */
  close(code: number, reason: string): void {
    if (this.#s.closed) return;
    this.#writesLost("the gateway closed the connection before the node answered");
    this.#s.client.close(code, reason);
    this.#upstream?.close(code === CLOSE.GOING_AWAY ? CLOSE.GOING_AWAY : CLOSE.NORMAL, reason);
    this.#finish(unansweredAs(code));
  }

  /** The prober took the connection's node out of rotation: a node that hangs keeps its socket open. */
  nodeFailed(): void {
    this.lose("out of rotation");
  }

  /**
   * The connection's node left rotation but answers (behind the others, cordoned): it moves to one in
   * rotation when it may (node-choice.ts).
   */
  nodeLeftRotation(): void {
    this.#choice.nodeLeftRotation();
  }

  #attach(socket: NodeSocket): void {
    this.#upstream = socket;
    this.#nodeAnswersPing = true;
    socket.on("pong", () => {
      if (socket === this.#upstream) this.#nodeAnswersPing = true;
    });
    // A lost socket's late events are ignored: only the current one speaks for the connection.
    socket.on(
      "message",
      this.guard((data: RawData, isBinary: boolean, failedHere?: ReadonlyMap<string, ErrorCode>) => {
        if (socket !== this.#upstream) return;
        // a bridge's own errors for a node that failed its calls cost nothing, as over HTTP
        for (const [id, code] of failedHere ?? []) this.#s.pending.failedHere(id, code);
        this.fromNode(data, isBinary);
      }),
    );
    // a bridge's message its node refused the connection for reached no node: it goes again whole (move.ts)
    socket.on(
      "undelivered",
      this.guard((text: string) => {
        if (socket === this.#upstream) this.#s.pending.undelivered(text);
      }),
    );
    socket.on(
      "close",
      this.guard((code: number) => {
        if (socket === this.#upstream) this.lose(`closed (${code})`);
      }),
    );
    socket.on(
      "error",
      this.guard((error: Error & { code?: string }) => {
        if (socket !== this.#upstream) return;
        // a node's message past four times the size cap (policy.ts OVERSIZE_READ), which ws refuses before
        // it closes the socket (1009): with one message in flight, that was its answer, and would be on any
        // node; with several, none can be told, and they all go again
        const inFlight = error.code === MESSAGE_TOO_BIG ? [...this.#s.pending.sentAndUnanswered()] : [];
        const [only] = inFlight;
        if (only !== undefined && inFlight.length === 1) only.oversized = true;
        this.lose(only?.oversized === true ? "closed for an answer over the size cap" : "failed");
      }),
    );
  }

  /**
   * At each of the client's pings the node's socket is pinged too: one that has not answered the last (the
   * path to it went dark, no FIN or RST, while the node answers the prober over HTTP) is a lost node, and
   * the connection moves, where its subscriptions would hear nothing more.
   */
  #pingNode(): void {
    const upstream = this.#upstream;
    if (upstream?.ping === undefined || upstream.readyState !== upstream.OPEN) return;
    if (!this.#nodeAnswersPing) {
      // not opened on that node again: a new socket there would most likely go the same dark way
      this.lose(
        `silent (no pong within ${this.#s.options.limits.ws.pingIntervalMs} ms)`,
        undefined,
        this.#s.node,
      );
      return;
    }
    this.#nodeAnswersPing = false;
    upstream.ping();
  }

  /**
   * A listener whose throw breaks this connection only: the error goes through the pipeline's boundary,
   * and the connection is closed with 1011. Without it, a throw in a socket's listener would reach the
   * process's uncaught-exception handler and end every other connection and request with it.
   */
  guard<A extends unknown[]>(listener: (...args: A) => void): (...args: A) => void {
    return (...args) => {
      try {
        listener(...args);
      } catch (error) {
        this.broke(error);
      }
    };
  }

  /** An unexpected error: logged INTERNAL, answered to the message it broke if there is one, and the connection closed with 1011. */
  broke(error: unknown, replyId?: string): void {
    const caught = this.#s.options.boundary.caught(error, "websocket message", {
      label: this.#s.label,
      upstream: this.#s.node.name,
    });
    if (replyId !== undefined) this.toClient(errorBody(caught, jsonRpcStyle(this.#s.policy), replyId), false);
    this.close(CLOSE.INTERNAL, "internal error");
  }

  /**
   * Sends a message upstream, or keeps it for the new socket while the connection moves, or until its node
   * reaches the served head (`waited`: it was kept so, and goes now, the node caught up or not).
   */
  transmit(outgoing: UpstreamMessage, waited = false): void {
    const bound = this.#s.options.limits.ws.maxBufferedBytes;
    if (this.#s.move?.moving === true || this.#upstream === undefined) {
      // what a client sends while no node takes it is held in memory: bounded as what it does not read is
      if (this.#s.move?.hold(outgoing, bound) === false)
        this.tooMuchSent("while the connection changes its node");
      return;
    }
    if (
      !waited &&
      (this.#untilHead.holding ||
        waitsForHead(this.#s.node, outgoing, this.#s.options.servedHead, this.#s.policy.reads))
    ) {
      this.#holdUntilHead(outgoing, bound);
      return;
    }
    if (this.#askedAtHead(outgoing)) return;
    if (!this.#atPoint && this.#s.stateful && holdsPoint(outgoing, this.#s.policy.reads))
      this.#atPoint = true;
    outgoing.sent = true;
    const upstream = this.#upstream;
    upstream.send(outgoing.text ?? this.#sender.build(outgoing.calls, outgoing.batch));
    // A node that reads nothing of what it is sent (hung, its socket still open) would have the gateway hold
    // all a client sends for it: past the bound it is a lost node, and the connection moves off it.
    if (upstream.bufferedAmount > bound) this.lose(`stalled (it read none of the last ${bound} bytes sent)`);
  }

  /**
   * Holds a message until the connection's node has reached the head the label served, or about a block has
   * passed (group.ts `whenCaughtUp`), then sends it and those held after it, in order.
   */
  #holdUntilHead(outgoing: UpstreamMessage, bound: number): void {
    const first = !this.#untilHead.holding;
    if (!this.#untilHead.hold(outgoing, bound)) this.tooMuchSent("while its node catches up with the head");
    if (!first) return;
    this.#s.options.caughtUp(
      this.#s.node,
      this.guard(() => {
        const held = this.#untilHead.release();
        if (this.#s.closed) return;
        // the first goes now, caught up or not; one after it that waits again holds the rest behind it
        const [first, ...rest] = held;
        if (first !== undefined) this.transmit(first, true);
        for (const message of rest) this.transmit(message);
      }),
    );
  }

  /**
   * The client sent more than the send buffer's bound while what it sent was held (`during`: while the
   * connection had no node, or one of its messages waited for its quota): closed with 1008.
   */
  tooMuchSent(during: string): void {
    if (this.#s.closed) return;
    this.#s.client.close(CLOSE.POLICY, `too much sent ${during}`);
    setTimeout(() => this.#s.client.terminate(), 1000).unref();
    this.#end();
  }

  /**
   * A message of reads its node cannot answer as the label has been served goes to a node that can
   * (head-reads.ts `readsElsewhere`), and its answer comes back as the node's would. True when it went.
   */
  #askedAtHead(outgoing: UpstreamMessage): boolean {
    const { headAsk } = this.#s.options;
    // a connection whose node holds state at a point (head-reads.ts holdsPoint) reads there: another node
    // has none of it
    if (headAsk === undefined || this.#atPoint) return false;
    const elsewhere = readsElsewhere(
      this.#s.node,
      outgoing,
      this.#s.pending,
      this.#s.options,
      this.#s.policy.reads,
    );
    if (elsewhere === undefined) return false;
    const { calls } = outgoing;
    const text = outgoing.text ?? this.#sender.build(calls, outgoing.batch);
    const ids = calls.map((call) => call.id as string);
    const asked = headAsk(
      text,
      ids,
      outgoing.batch,
      elsewhere.atLeast,
      elsewhere.final,
      (answer, failedHere) => {
        if (this.#s.closed) return;
        for (const [id, code] of failedHere ?? []) this.#s.pending.failedHere(id, code);
        this.fromNode(Buffer.from(answer), false, true);
      },
    );
    if (asked) outgoing.sent = true;
    return asked;
  }

  /** What `calls` cost in compute units (docs/compute-units.md). */
  unitsOf(calls: readonly PassedCall[]): number {
    const { mounted } = this.#s.options;
    return callsUnits(
      mounted.mount.policy.computeUnits,
      calls.map((call) => call.method),
      mounted.admitted.endpoint,
    );
  }

  /** What the node sent: `fromArchive`, answers another node gave (node-intake.ts). */
  fromNode(data: RawData, isBinary: boolean, fromArchive = false): void {
    this.#liveness.touch();
    this.#nodeIntake.receive(data, isBinary, fromArchive);
  }

  /**
   * The upstream socket is gone, or its node out of rotation: the connection moves to another node
   * (move.ts), unless it holds node state or its client is leaving, and then it is closed with 1014.
   * `chosen`: the node still answers, and the connection leaves it for a better one (nodeLeftRotation).
   * `avoid`: a node the move does not open its socket on.
   */
  lose(
    why: string,
    chosen?: { readonly socket: NodeSocket; readonly node: Upstream },
    avoid?: Upstream,
  ): void {
    // a socket lost after a move got it (remaking subscriptions, or waiting for its node to reach the
    // head) moves the connection again
    if (this.#s.closed || (this.#s.move?.moving === true && !this.#s.move.onNewSocket)) {
      chosen?.socket.close();
      return;
    }
    this.#s.lostNode = this.#s.node;
    const lost = this.#upstream;
    this.#upstream = undefined;
    lost?.terminate();
    // what the move was doing on the lost socket is over: its subscribe calls' ends are not its failure
    this.#s.move?.socketLost();
    this.#s.calls.abandon();
    const holdsNodeState = this.holdsNodeState();
    if (holdsNodeState || this.#s.client.readyState !== this.#s.client.OPEN) {
      chosen?.socket.close();
      // the reason says why it did not move (docs/websocket.md): within a close frame's 123 bytes
      this.#closeMoved(
        `upstream ${why}${holdsNodeState ? "; the connection holds state only that node has" : ""}`,
      );
      return;
    }
    this.#mover().start(why, chosen, avoid);
  }

  /**
   * Whether it holds state only its node has, and so cannot move: a WebSocket-only call made on it, or a
   * pinned subscription (an extrinsic watched) kept or on its way. One unsubscribed (unwatched) holds none.
   */
  holdsNodeState(): boolean {
    if (this.#s.stateful || this.#s.remembered.pinned) return true;
    for (const pending of this.#s.pending.values())
      if (pending.kind === "subscribe" && this.#s.remembered.isPinned(pending.call.method)) return true;
    return false;
  }

  /** The connection's move, made the first time it has to move. */
  #mover(): ConnectionMove {
    if (this.#s.move !== undefined) return this.#s.move;
    const connection = this;
    this.#s.move = new ConnectionMove(
      {
        pending: this.#s.pending,
        remembered: this.#s.remembered,
        calls: this.#s.calls,
        fill: this.#fill,
        get closed() {
          return connection.#s.closed;
        },
        requestId: this.#s.options.mounted.admitted.requestId,
        errorForm: errorFormOf(this.#s.policy, false),
        maxResponseBytes: this.#s.options.limits.upstream.maxResponseBytes,
        attach: (socket, node) => {
          this.#s.node = node;
          this.#attach(socket);
        },
        transmit: (message) => this.transmit(message),
        toClient: (text) => this.toClient(text, false),
        refused: (message, code) => {
          endMessage(message.span, this.#s.label, methodOf(message), code);
          message.whenAnswered?.(code);
        },
        closeMoved: (reason) => this.#closeMoved(reason),
        caughtUp: (callback) => this.#s.options.caughtUp(this.#s.node, callback),
        settled: () => {
          this.#s.lostNode = undefined;
          this.#choice.moved();
        },
        guard: (listener) => this.guard(listener),
      },
      this.#s.options.reconnect,
      this.#s.options.limits.ws.handshakeTimeoutMs,
      () => {
        this.#s.options.metrics?.webSocketMoves.add([this.#s.label, "moved"]);
        // the operator sees a connection move as a node's failure's consequence, not only in a counter
        this.#s.options.logger.log("info", "websocket moved", {
          requestId: this.#s.options.mounted.admitted.requestId,
          label: this.#s.label,
          from: this.#s.lostNode?.name,
          to: this.#s.node.name,
        });
      },
    );
    return this.#s.move;
  }

  #closeMoved(reason: string): void {
    if (this.#s.closed) return;
    this.#s.options.metrics?.webSocketMoves.add([this.#s.label, "closed"]);
    this.#writesLost(
      "the upstream socket was lost before the node answered, and the connection could not move",
    );
    if (this.#s.client.readyState === this.#s.client.OPEN) this.#s.client.close(CLOSE.BAD_GATEWAY, reason);
    this.#upstream?.close(CLOSE.NORMAL, reason);
    this.#finish("NO_UPSTREAM");
  }

  /**
   * The writes its node had and had not answered, as the gateway closes the connection: their answers are
   * lost, so each gets WRITE_NOT_CONFIRMED by its id (in its batch's answer if it had company), as a write
   * a move loses does (move.ts); never silence, which leaves an SDK's call pending for ever.
   */
  #writesLost(reason: string): void {
    const { requestId } = this.#s.options.mounted.admitted;
    const form = errorFormOf(this.#s.policy, false);
    for (const [message, writes] of this.#s.pending.sentWrites()) {
      const answers = writes.map((write) =>
        rpcErrorJson("WRITE_NOT_CONFIRMED", write.call.id as string, { reason }, requestId, form),
      );
      this.toClient(message.batch ? `[${answers.join(",")}]` : (answers[0] as string), false);
    }
  }

  /** Sends to the client unless it stopped reading: past the buffer bound it is closed, not buffered. */
  toClient(data: string | RawData, binary: boolean): void {
    if (this.#s.closed || this.#s.client.readyState !== this.#s.client.OPEN) return;
    if (this.#s.client.bufferedAmount > this.#s.options.limits.ws.maxBufferedBytes) {
      this.#s.client.close(CLOSE.POLICY, "send buffer full: the client is not reading");
      // A client that does not read will not read the close frame either.
      setTimeout(() => this.#s.client.terminate(), 1000).unref();
      this.#end();
      return;
    }
    this.#s.client.send(data, { binary });
    this.#s.options.metrics?.webSocketFrames.add([this.#s.label, "out"]);
  }

  /** The client went away (or must): its upstream socket is closed too, so nothing is left half-open. */
  #end(): void {
    if (this.#s.closed) return;
    const upstream = this.#upstream;
    if (
      upstream !== undefined &&
      (upstream.readyState === upstream.OPEN || upstream.readyState === upstream.CONNECTING)
    )
      upstream.close(CLOSE.NORMAL, "client closed");
    this.#finish("CLIENT_CLOSED");
  }

  /**
   * `unanswered`: what the messages whose count waited for an answer that will not come now ended as: the
   * client left, or the gateway closed the connection with them still out, and why (its node gone, a
   * shutdown, the key withdrawn, its quota spent); a message with a write ends as WRITE_NOT_CONFIRMED
   * whenever the gateway closed it (message-sender.ts).
   */
  #finish(unanswered: ErrorCode): void {
    if (this.#s.closed) return;
    this.#s.closed = true;
    this.#liveness.stop();
    this.#choice.stop();
    this.#token?.stop();
    this.#s.calls.abandon();
    this.#s.options.cache?.close();
    for (const pending of this.#s.pending.values()) pending.message.whenAnswered?.(unanswered);
    this.#s.options.onClose();
  }
}

/** The error ws refuses a message past its `maxPayload` with, before it closes the socket (1009). */
const MESSAGE_TOO_BIG = "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH";

/** What a read still out when the gateway closes a connection with `code` ends as, for its caller's usage and the metrics. */
function unansweredAs(code: number): ErrorCode {
  if (code === CLOSE.GOING_AWAY) return "DRAIN_CUT";
  if (code === CLOSE.POLICY) return "KEY_WITHDRAWN";
  if (code === CLOSE.QUOTA_EXCEEDED) return "QUOTA_EXCEEDED";
  if (code === CLOSE.BAD_GATEWAY) return "NO_UPSTREAM";
  return "INTERNAL";
}
