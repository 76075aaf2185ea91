import type { RawData, WebSocket } from "ws";
import type { Limits } from "../config/types.js";
import { errorBody, errorFormOf, jsonRpcStyle, rpcErrorJson } from "../errors/respond.js";
import type { ErrorCode } from "../errors/table.js";
import { callRulesOf } from "../jsonrpc/call-rules.js";
import type { CallRules, PassedCall } from "../jsonrpc/check.js";
import { TokenLifetime } from "../keys/token-lifetime.js";
import type { UsageRecorder } from "../keys/usage.js";
import type { GatewayMetrics } from "../metrics/gateway-metrics.js";
import type { Mounted, Stages } from "../pipeline/stages.js";
import { archiveUnits, type BatchPart, batchParts, callsUnits } from "../plans/compute-units.js";
import type { BodyTest, JsonRpcPolicy } from "../registry/types.js";
import { endMessage } from "../tracing/span-ends.js";
import type { RequestTrace } from "../tracing/tracing.js";
import type { Upstream } from "../upstream/upstreams.js";
import type { CachedCalls, CacheKeep } from "./cached-calls.js";
import { CLOSE } from "./close-codes.js";
import type { ConnectionOptions } from "./connection-options.js";
import type { FillContext } from "./gap-fill.js";
import { GatewayCalls } from "./gateway-calls.js";
import { holdsPoint, readsElsewhere, waitsForHead } from "./head-reads.js";
import { ClientLiveness } from "./liveness.js";
import { type IntakeHost, MessageIntake } from "./message-intake.js";
import { type MessageSeen, MessageSender, type SenderHost } from "./message-sender.js";
import { ConnectionMove, type Reconnect } from "./move.js";
import { type ChoosingConnection, NodeChoice } from "./node-choice.js";
import { NodeIntake, type NodeIntakeHost } from "./node-intake.js";
import type { NodeSocket } from "./node-socket.js";
import { PendingCalls, type UpstreamMessage } from "./pending-calls.js";
import { RememberedSubscriptions, type Subscription } from "./subscriptions.js";

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
 * cannot, and is closed with 1014.
 */
export class Connection {
  readonly #client: WebSocket;
  #upstream: NodeSocket | undefined;
  #node: Upstream;
  readonly #options: ConnectionOptions;
  readonly #rules: CallRules;
  readonly #policy: JsonRpcPolicy;
  readonly #label: string;
  readonly #pending = new PendingCalls();
  readonly #remembered: RememberedSubscriptions;
  readonly #calls: GatewayCalls;
  readonly #fill: FillContext;
  /**
   * Made at the connection's first move (move.ts): most connections never move, and what a move needs of
   * the connection is a dozen closures, which every idle connection held (docs/websocket.md).
   */
  #move: ConnectionMove | undefined = undefined;
  readonly #sender: MessageSender;
  /** A WebSocket-only call went upstream: the node holds state for this connection. */
  #stateful = false;
  /**
   * Messages held, in order, while the node reaches the head the label served (head-reads.ts
   * `waitsForHead`), and their size in characters: what follows a held call must not overtake it.
   */
  #untilHead: UpstreamMessage[] | undefined = undefined;
  #untilHeadChars = 0;
  /**
   * A call that keeps state at a point went to the node (head-reads.ts `holdsPoint`: a ledger state
   * acquired): the connection's reads are answered there, by its node alone.
   */
  #atPoint = false;
  /** When it leaves a node that still answers for a better one. */
  readonly #choice: NodeChoice;
  /** The node it last lost (or left): where the writes a move refuses were lost. */
  #lostNode: Upstream | undefined = undefined;
  readonly #intake: MessageIntake;
  #closed = false;
  /** What the node sends the connection (node-intake.ts). */
  readonly #nodeIntake: NodeIntake;
  readonly #liveness: ClientLiveness;
  /** The node's socket answered the last ping sent to it (or none was sent since it was attached). */
  #nodeAnswersPing = true;
  /** Closes the connection when the JWT it opened with stops being valid. */
  #token: TokenLifetime | undefined = undefined;

  constructor(client: WebSocket, upstream: NodeSocket, node: Upstream, options: ConnectionOptions) {
    this.#client = client;
    this.#node = node;
    this.#options = options;
    const { mounted } = options;
    this.#label = mounted.admitted.endpoint.label;
    this.#policy = mounted.mount.policy.jsonrpc as JsonRpcPolicy;
    // a range call goes to the connection's node as one: one too wide for it is refused
    this.#rules = callRulesOf(mounted, "websocket", options.support, (call) =>
      options.stages.callRefusal(mounted, call),
    );
    this.#remembered = new RememberedSubscriptions(this.#policy.subscriptions);
    this.#calls = new GatewayCalls((text) => this.#upstream?.send(text));
    this.#fill = {
      calls: this.#calls,
      idMember: this.#policy.subscriptions?.idMember ?? "subscription",
      head: mounted.mount.head,
      send: (text) => this.#toClient(text, false),
    };
    const host = new Connection.#Host(this);
    this.#choice = new NodeChoice(host);
    this.#sender = new MessageSender(host);
    this.#intake = new MessageIntake(host);
    this.#nodeIntake = new NodeIntake(host, options, this.#policy, this.#fill);
    client.on(
      "message",
      this.#guard((data: RawData) => {
        this.#liveness.touch();
        this.#intake.receive(data);
      }),
    );
    client.on(
      "close",
      this.#guard(() => this.#end()),
    );
    client.on(
      "error",
      this.#guard(() => this.#end()),
    );
    this.#attach(upstream);
    this.#liveness = new ClientLiveness(
      client,
      options.limits.ws,
      (listener) => this.#guard(listener),
      () => this.close(CLOSE.NORMAL, "idle timeout"),
      () => this.#pingNode(),
    );
    const validUntil = mounted.admitted.tokenValidUntilMs;
    if (validUntil !== undefined)
      this.#token = new TokenLifetime(
        validUntil,
        this.#guard(() => this.close(CLOSE.POLICY, "the JWT expired: connect again with a new one")),
      );
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
    this.#writesLost("the gateway closed the connection before the node answered");
    this.#client.close(code, reason);
    this.#upstream?.close(code === CLOSE.GOING_AWAY ? CLOSE.GOING_AWAY : CLOSE.NORMAL, reason);
    this.#finish(unansweredAs(code));
  }

  /** The prober took the connection's node out of rotation: a node that hangs keeps its socket open. */
  nodeFailed(): void {
    this.#lose("out of rotation");
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
      this.#guard((data: RawData, isBinary: boolean, failedHere?: ReadonlyMap<string, ErrorCode>) => {
        if (socket !== this.#upstream) return;
        // a bridge's own errors for a node that failed its calls cost nothing, as over HTTP
        for (const [id, code] of failedHere ?? []) this.#pending.failedHere(id, code);
        this.#fromNode(data, isBinary);
      }),
    );
    // a bridge's message its node refused the connection for reached no node: it goes again whole (move.ts)
    socket.on(
      "undelivered",
      this.#guard((text: string) => {
        if (socket === this.#upstream) this.#pending.undelivered(text);
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
      this.#guard((error: Error & { code?: string }) => {
        if (socket !== this.#upstream) return;
        // a node's message past four times the size cap (policy.ts OVERSIZE_READ), which ws refuses before
        // it closes the socket (1009): with one message in flight, that was its answer, and would be on any
        // node; with several, none can be told, and they all go again
        const inFlight = error.code === MESSAGE_TOO_BIG ? [...this.#pending.sentAndUnanswered()] : [];
        const [only] = inFlight;
        if (only !== undefined && inFlight.length === 1) only.oversized = true;
        this.#lose(only?.oversized === true ? "closed for an answer over the size cap" : "failed");
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
      this.#lose(
        `silent (no pong within ${this.#options.limits.ws.pingIntervalMs} ms)`,
        undefined,
        this.#node,
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
    if (replyId !== undefined) this.#toClient(errorBody(caught, jsonRpcStyle(this.#policy), replyId), false);
    this.close(CLOSE.INTERNAL, "internal error");
  }

  /**
   * Sends a message upstream, or keeps it for the new socket while the connection moves, or until its node
   * reaches the served head (`waited`: it was kept so, and goes now, the node caught up or not).
   */
  #transmit(outgoing: UpstreamMessage, waited = false): void {
    const bound = this.#options.limits.ws.maxBufferedBytes;
    if (this.#move?.moving === true || this.#upstream === undefined) {
      // what a client sends while no node takes it is held in memory: bounded as what it does not read is
      if ((this.#move?.hold(outgoing) ?? 0) > bound) this.#tooMuchHeld();
      return;
    }
    if (
      !waited &&
      (this.#untilHead !== undefined ||
        waitsForHead(this.#node, outgoing, this.#options.servedHead, this.#policy.reads))
    ) {
      this.#holdUntilHead(outgoing, bound);
      return;
    }
    if (this.#askedAtHead(outgoing)) return;
    if (!this.#atPoint && this.#stateful && holdsPoint(outgoing, this.#policy.reads)) this.#atPoint = true;
    outgoing.sent = true;
    const upstream = this.#upstream;
    upstream.send(outgoing.text ?? this.#sender.build(outgoing.calls, outgoing.batch));
    // A node that reads nothing of what it is sent (hung, its socket still open) would have the gateway hold
    // all a client sends for it: past the bound it is a lost node, and the connection moves off it.
    if (upstream.bufferedAmount > bound) this.#lose(`stalled (it read none of the last ${bound} bytes sent)`);
  }

  /**
   * Holds a message until the connection's node has reached the head the label served, or about a block has
   * passed (group.ts `whenCaughtUp`), then sends it and those held after it, in order.
   */
  #holdUntilHead(outgoing: UpstreamMessage, bound: number): void {
    this.#untilHeadChars += outgoing.text?.length ?? outgoing.calls.length * 256;
    if (this.#untilHead !== undefined) {
      this.#untilHead.push(outgoing);
      if (this.#untilHeadChars > bound) this.#tooMuchHeld();
      return;
    }
    this.#untilHead = [outgoing];
    this.#options.caughtUp(
      this.#node,
      this.#guard(() => {
        const held = this.#untilHead ?? [];
        this.#untilHead = undefined;
        this.#untilHeadChars = 0;
        if (this.#closed) return;
        // the first goes now, caught up or not; one after it that waits again holds the rest behind it
        const [first, ...rest] = held;
        if (first !== undefined) this.#transmit(first, true);
        for (const message of rest) this.#transmit(message);
      }),
    );
  }

  /** The client sent more than the send buffer's bound while the connection had no node: closed with 1008. */
  #tooMuchHeld(): void {
    if (this.#closed) return;
    this.#client.close(CLOSE.POLICY, "too much sent while the connection changes its node");
    setTimeout(() => this.#client.terminate(), 1000).unref();
    this.#end();
  }

  /**
   * A message of reads its node cannot answer as the label has been served goes to a node that can
   * (head-reads.ts `readsElsewhere`), and its answer comes back as the node's would. True when it went.
   */
  #askedAtHead(outgoing: UpstreamMessage): boolean {
    const { headAsk } = this.#options;
    // a connection whose node holds state at a point (head-reads.ts holdsPoint) reads there: another node
    // has none of it
    if (headAsk === undefined || this.#atPoint) return false;
    const elsewhere = readsElsewhere(this.#node, outgoing, this.#pending, this.#options, this.#policy.reads);
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
        if (this.#closed) return;
        for (const [id, code] of failedHere ?? []) this.#pending.failedHere(id, code);
        this.#fromNode(Buffer.from(answer), false, true);
      },
    );
    if (asked) outgoing.sent = true;
    return asked;
  }

  /** What `calls` cost in compute units (docs/compute-units.md). */
  #unitsOf(calls: readonly PassedCall[]): number {
    const { mounted } = this.#options;
    return callsUnits(
      mounted.mount.policy.computeUnits,
      calls.map((call) => call.method),
      mounted.admitted.endpoint,
    );
  }

  /** What the node sent: `fromArchive`, answers another node gave (node-intake.ts). */
  #fromNode(data: RawData, isBinary: boolean, fromArchive = false): void {
    this.#liveness.touch();
    this.#nodeIntake.receive(data, isBinary, fromArchive);
  }

  /**
   * The upstream socket is gone, or its node out of rotation: the connection moves to another node
   * (move.ts), unless it holds node state or its client is leaving, and then it is closed with 1014.
   * `chosen`: the node still answers, and the connection leaves it for a better one (nodeLeftRotation).
   * `avoid`: a node the move does not open its socket on.
   */
  #lose(
    why: string,
    chosen?: { readonly socket: NodeSocket; readonly node: Upstream },
    avoid?: Upstream,
  ): void {
    // a socket lost after a move got it (remaking subscriptions, or waiting for its node to reach the
    // head) moves the connection again
    if (this.#closed || (this.#move?.moving === true && !this.#move.onNewSocket)) {
      chosen?.socket.close();
      return;
    }
    this.#lostNode = this.#node;
    const lost = this.#upstream;
    this.#upstream = undefined;
    lost?.terminate();
    // what the move was doing on the lost socket is over: its subscribe calls' ends are not its failure
    this.#move?.socketLost();
    this.#calls.abandon();
    const holdsNodeState = this.#holdsNodeState();
    if (holdsNodeState || this.#client.readyState !== this.#client.OPEN) {
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
  #holdsNodeState(): boolean {
    if (this.#stateful || this.#remembered.pinned) return true;
    for (const pending of this.#pending.values())
      if (pending.kind === "subscribe" && this.#remembered.isPinned(pending.call.method)) return true;
    return false;
  }

  /** The connection's move, made the first time it has to move. */
  #mover(): ConnectionMove {
    if (this.#move !== undefined) return this.#move;
    const connection = this;
    this.#move = new ConnectionMove(
      {
        pending: this.#pending,
        remembered: this.#remembered,
        calls: this.#calls,
        fill: this.#fill,
        get closed() {
          return connection.#closed;
        },
        requestId: this.#options.mounted.admitted.requestId,
        errorForm: errorFormOf(this.#policy, false),
        maxResponseBytes: this.#options.limits.upstream.maxResponseBytes,
        attach: (socket, node) => {
          this.#node = node;
          this.#attach(socket);
        },
        transmit: (message) => this.#transmit(message),
        toClient: (text) => this.#toClient(text, false),
        refused: (message, code) => {
          endMessage(message.span, this.#label, methodOf(message), code);
          message.whenAnswered?.(code);
        },
        closeMoved: (reason) => this.#closeMoved(reason),
        caughtUp: (callback) => this.#options.caughtUp(this.#node, callback),
        settled: () => {
          this.#lostNode = undefined;
          this.#choice.moved();
        },
        guard: (listener) => this.#guard(listener),
      },
      this.#options.reconnect,
      this.#options.limits.ws.handshakeTimeoutMs,
      () => {
        this.#options.metrics?.webSocketMoves.add([this.#label, "moved"]);
        // the operator sees a connection move as a node's failure's consequence, not only in a counter
        this.#options.logger.log("info", "websocket moved", {
          requestId: this.#options.mounted.admitted.requestId,
          label: this.#label,
          from: this.#lostNode?.name,
          to: this.#node.name,
        });
      },
    );
    return this.#move;
  }

  #closeMoved(reason: string): void {
    if (this.#closed) return;
    this.#options.metrics?.webSocketMoves.add([this.#label, "closed"]);
    this.#writesLost(
      "the upstream socket was lost before the node answered, and the connection could not move",
    );
    if (this.#client.readyState === this.#client.OPEN) this.#client.close(CLOSE.BAD_GATEWAY, reason);
    this.#upstream?.close(CLOSE.NORMAL, reason);
    this.#finish("NO_UPSTREAM");
  }

  /**
   * The writes its node had and had not answered, as the gateway closes the connection: their answers are
   * lost, so each gets WRITE_NOT_CONFIRMED by its id (in its batch's answer if it had company), as a write
   * a move loses does (move.ts); never silence, which leaves an SDK's call pending for ever.
   */
  #writesLost(reason: string): void {
    const { requestId } = this.#options.mounted.admitted;
    const form = errorFormOf(this.#policy, false);
    for (const [message, writes] of this.#pending.sentWrites()) {
      const answers = writes.map((write) =>
        rpcErrorJson("WRITE_NOT_CONFIRMED", write.call.id as string, { reason }, requestId, form),
      );
      this.#toClient(message.batch ? `[${answers.join(",")}]` : (answers[0] as string), false);
    }
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

  /** The client went away (or must): its upstream socket is closed too, so nothing is left half-open. */
  #end(): void {
    if (this.#closed) return;
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
    if (this.#closed) return;
    this.#closed = true;
    this.#liveness.stop();
    this.#choice.stop();
    this.#token?.stop();
    this.#calls.abandon();
    this.#options.cache?.close();
    for (const pending of this.#pending.values()) pending.message.whenAnswered?.(unanswered);
    this.#options.onClose();
  }

  /**
   * What the connection lends its parts: its sender, its intake, its choice of a better node, its archive
   * asking and its ledger's settling. One object per connection, whose getters and methods sit on one
   * prototype shared by every connection: an object literal of getters and arrow functions per part and
   * connection held some 8 KB of heap per idle connection (docs/websocket.md). Written inside the class to
   * read the connection's private fields.
   */
  static readonly #Host = class implements ConnectionHost {
    readonly #connection: Connection;
    readonly cachedShare: number;

    constructor(connection: Connection) {
      this.#connection = connection;
      const { mounted } = connection.#options;
      this.cachedShare = mounted.admitted.plan?.cachedShare ?? 1;
    }

    get closed(): boolean {
      return this.#connection.#closed;
    }
    get node(): Upstream {
      return this.#connection.#node;
    }
    get pending(): PendingCalls {
      return this.#connection.#pending;
    }
    get remembered(): RememberedSubscriptions {
      return this.#connection.#remembered;
    }
    get rules(): CallRules {
      return this.#connection.#rules;
    }
    get policy(): JsonRpcPolicy {
      return this.#connection.#policy;
    }
    get refusedWrite(): readonly BodyTest[] | undefined {
      return this.#connection.#options.mounted.mount.policy.refusedWrite;
    }
    get label(): string {
      return this.#connection.#label;
    }
    get limits(): Limits {
      return this.#connection.#options.limits;
    }
    get stages(): Stages {
      return this.#connection.#options.stages;
    }
    get mounted(): Mounted {
      return this.#connection.#options.mounted;
    }
    get metrics(): GatewayMetrics | undefined {
      return this.#connection.#options.metrics;
    }
    get usage(): UsageRecorder | undefined {
      return this.#connection.#options.usage;
    }
    get trace(): RequestTrace | undefined {
      return this.#connection.#options.trace;
    }
    get cache(): CachedCalls | undefined {
      return this.#connection.#options.cache;
    }
    get reconnect(): Reconnect {
      return this.#connection.#options.reconnect;
    }
    get sender(): MessageSender {
      return this.#connection.#sender;
    }
    get calls(): GatewayCalls {
      return this.#connection.#calls;
    }

    // the choice of a better node (node-choice.ts)
    get moving(): boolean {
      return this.#connection.#move?.moving === true;
    }
    get holdsNodeState(): boolean {
      return this.#connection.#holdsNodeState();
    }
    get clientOpen(): boolean {
      const client = this.#connection.#client;
      return client.readyState === client.OPEN;
    }
    untilChoice(): number {
      return this.#connection.#move?.untilChoice() ?? 0;
    }
    writeWaiting(): boolean {
      for (const pending of this.#connection.#pending.values()) if (pending.write) return true;
      return false;
    }
    betterThan(node: Upstream): boolean {
      return this.#connection.#options.betterThan(node);
    }
    moveTo(socket: NodeSocket, node: Upstream): void {
      this.#connection.#lose("out of rotation", { socket, node });
    }

    // the sender (message-sender.ts) and the intake (message-intake.ts)
    unitsOf(calls: readonly PassedCall[]): number {
      return this.#connection.#unitsOf(calls);
    }
    archiveExtraOf(calls: readonly PassedCall[]): number {
      const units = this.#connection.#unitsOf(calls);
      return archiveUnits(units, this.#connection.#options.mounted.mount.policy.computeUnits) - units;
    }
    stateful(): void {
      this.#connection.#stateful = true;
    }
    transmit(outgoing: UpstreamMessage): void {
      this.#connection.#transmit(outgoing);
    }
    toClient(text: string): void {
      this.#connection.#toClient(text, false);
    }
    relay(data: string | RawData, binary: boolean): void {
      this.#connection.#toClient(data, binary);
    }
    nodeAnswered(): void {
      this.#connection.#choice.answered();
    }
    closeIfSpent(): void {
      this.#connection.#intake.closeIfSpent();
    }
    finish(seen: MessageSeen, answer: string | undefined): void {
      this.#connection.#intake.finish(seen, answer);
    }
    // as an HTTP request the gateway failed is: a warn line with its code and node, never the key
    failed(seen: MessageSeen): void {
      const connection = this.#connection;
      const { admitted } = connection.#options.mounted;
      connection.#options.logger.log("warn", "websocket message", {
        requestId: admitted.requestId,
        label: connection.#label,
        key: admitted.principal?.keyId,
        method: seen.method,
        error: seen.code,
        // the node the write was lost at, not the one the connection moved to
        upstream: (connection.#lostNode ?? connection.#node).name,
      });
    }
    partsOf(calls: readonly PassedCall[]): BatchPart[] {
      return batchParts(
        this.#connection.#options.mounted.mount.policy.computeUnits,
        calls.map((call) => call.method),
      );
    }
    guard<A extends unknown[]>(listener: (...args: A) => void): (...args: A) => void {
      return this.#connection.#guard(listener);
    }
    broke(error: unknown, replyId?: string): void {
      this.#connection.#broke(error, replyId);
    }
    close(code: number, reason: string): void {
      this.#connection.close(code, reason);
    }

    // the archive asking (archive-reads.ts)
    build(call: PassedCall): string {
      return this.#connection.#sender.build([call], false);
    }
    drop(keep: CacheKeep): void {
      this.#connection.#options.cache?.drop(keep);
    }
    deliver(text: string): void {
      this.#connection.#fromNode(Buffer.from(text), false, true);
    }

    // what the node's answers to subscribe and unsubscribe calls change in the remembered subscriptions
    subscribed(call: PassedCall, upstreamId: string): string {
      return this.#connection.#nodeIntake.remember(call, upstreamId);
    }
    unsubscribed(target: Subscription | undefined): void {
      this.#connection.#remembered.remove(target);
    }
    wrote(): void {
      this.#connection.#options.onWrite(this.#connection.#node);
    }
    made(call: PassedCall, result: string): void {
      const connection = this.#connection;
      if (connection.#policy.reads?.handles?.make.includes(call.method) !== true || !result.startsWith('"'))
        return;
      const name: unknown = JSON.parse(result);
      if (typeof name === "string") connection.#options.onHandleMade(connection.#node, name, call);
    }
    kept(keep: CacheKeep, members: ReadonlyMap<string, string>): void {
      this.#connection.#options.cache?.keep(keep, members, this.#connection.#node);
    }
    answered(message: UpstreamMessage): void {
      endMessage(message.span, this.#connection.#label, methodOf(message), undefined);
    }
  };
}

/** What a connection lends its parts. */
type ConnectionHost = SenderHost & IntakeHost & ChoosingConnection & NodeIntakeHost;

/** The error ws refuses a message past its `maxPayload` with, before it closes the socket (1009). */
const MESSAGE_TOO_BIG = "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH";

/** A message's method as the metrics and its span name it. */
function methodOf(message: UpstreamMessage): string {
  return message.batch ? "batch" : (message.calls[0]?.method ?? "other");
}

/** What a read still out when the gateway closes a connection with `code` ends as, for its caller's usage and the metrics. */
function unansweredAs(code: number): ErrorCode {
  if (code === CLOSE.GOING_AWAY) return "DRAIN_CUT";
  if (code === CLOSE.POLICY) return "KEY_WITHDRAWN";
  if (code === CLOSE.QUOTA_EXCEEDED) return "QUOTA_EXCEEDED";
  if (code === CLOSE.BAD_GATEWAY) return "NO_UPSTREAM";
  return "INTERNAL";
}
