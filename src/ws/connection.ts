import type { RawData, WebSocket } from "ws";
import { readNeed } from "../answers/read-need.js";
import type { Limits } from "../config/types.js";
import { errorBody, errorFormOf, jsonRpcStyle, rpcErrorJson } from "../errors/respond.js";
import type { ErrorCode } from "../errors/table.js";
import { callRulesOf } from "../jsonrpc/call-rules.js";
import type { CallRules, PassedCall } from "../jsonrpc/check.js";
import { scanMembers } from "../jsonrpc/scan.js";
import { TokenLifetime } from "../keys/token-lifetime.js";
import type { UsageRecorder } from "../keys/usage.js";
import type { GatewayMetrics } from "../metrics/gateway-metrics.js";
import type { Mounted, Stages } from "../pipeline/stages.js";
import { archiveUnits, type BatchPart, batchParts, callsUnits } from "../plans/compute-units.js";
import type { BodyTest, JsonRpcPolicy } from "../registry/types.js";
import { endMessage } from "../tracing/span-ends.js";
import type { RequestTrace } from "../tracing/tracing.js";
import type { Upstream } from "../upstream/upstreams.js";
import { type ArchiveAsking, askArchive, plainReadsBeside } from "./archive-reads.js";
import type { CachedCalls, CacheKeep } from "./cached-calls.js";
import { CLOSE } from "./close-codes.js";
import type { ConnectionOptions } from "./connection-options.js";
import { deliver, type FillContext, recordStart } from "./gap-fill.js";
import { GatewayCalls } from "./gateway-calls.js";
import { ClientLiveness } from "./liveness.js";
import { type IntakeHost, MessageIntake, toText } from "./message-intake.js";
import { type MessageSeen, MessageSender, paramsOf, type SenderHost } from "./message-sender.js";
import { ConnectionMove, type Reconnect } from "./move.js";
import { type ArchiveRefusals, archiveRefusals, missingStateIds, withinCap } from "./node-answers.js";
import { type ChoosingConnection, NodeChoice } from "./node-choice.js";
import type { NodeSocket } from "./node-socket.js";
import { PendingCalls, type Settled, type UpstreamMessage } from "./pending-calls.js";
import { RememberedSubscriptions, type Subscription } from "./subscriptions.js";

/**
 * One client connection and its upstream socket. Both directions are handled synchronously in arrival
 * order, so order is preserved, and notifications are passed on the moment they arrive. Every client
 * message passes stages 4 and 5 of the pipeline (pipeline/stages.ts) in its intake (message-intake.ts),
 * with the same checks as over HTTP, and stage 7 in its sender.
 *
 * The connection remembers its subscriptions (subscriptions.ts) and keeps a ledger of its calls in flight
 * (pending-calls.ts); its messages go toward the node through its sender (message-sender.ts), which answers
 * from the cache and waits on calls in flight first. When its upstream socket is lost it moves to another
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
  /** When it leaves a node that still answers for a better one. */
  readonly #choice: NodeChoice;
  /** The node it last lost (or left): where the writes a move refuses were lost. */
  #lostNode: Upstream | undefined = undefined;
  readonly #intake: MessageIntake;
  #closed = false;
  readonly #archiveRefusals: ArchiveRefusals | undefined;
  /** The texts of a node's "no such state" answers (registry `reads.archive.missingState`). */
  readonly #missingState: readonly string[] | undefined;
  /** What the connection lends its parts (#Host). */
  readonly #host: ConnectionHost;
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
    this.#archiveRefusals = archiveRefusals(mounted);
    this.#missingState = mounted.mount.policy.jsonrpc?.reads?.archive?.missingState;
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
    this.#host = host;
    this.#choice = new NodeChoice(host);
    this.#sender = new MessageSender(host);
    this.#intake = new MessageIntake(host);
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
        this.#fromUpstream(data, isBinary);
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

  /** Sends a message upstream, or keeps it for the new socket while the connection moves. */
  #transmit(outgoing: UpstreamMessage): void {
    const bound = this.#options.limits.ws.maxBufferedBytes;
    if (this.#move?.moving === true || this.#upstream === undefined) {
      // what a client sends while no node takes it is held in memory: bounded as what it does not read is
      if ((this.#move?.hold(outgoing) ?? 0) > bound) this.#tooMuchHeld();
      return;
    }
    if (this.#askedAtHead(outgoing)) return;
    outgoing.sent = true;
    const upstream = this.#upstream;
    upstream.send(outgoing.text ?? this.#sender.build(outgoing.calls, outgoing.batch));
    // A node that reads nothing of what it is sent (hung, its socket still open) would have the gateway hold
    // all a client sends for it: past the bound it is a lost node, and the connection moves off it.
    if (upstream.bufferedAmount > bound) this.#lose(`stalled (it read none of the last ${bound} bytes sent)`);
  }

  /** The client sent more than the send buffer's bound while the connection had no node: closed with 1008. */
  #tooMuchHeld(): void {
    if (this.#closed) return;
    this.#client.close(CLOSE.POLICY, "too much sent while the connection changes its node");
    setTimeout(() => this.#client.terminate(), 1000).unref();
    this.#end();
  }

  /**
   * A read at the head, or of a block, that the connection's node has not reached goes to a node of the
   * label that has (head-reads.ts), as does a batch of such reads; and a read at the finalized tag, when
   * another node named a higher finalized block than the connection's node (a caller shown that block on
   * another socket would see finality go back). Its answer comes back as the node's would. True when it
   * went. A message with a write, a subscription, a filter's call or a WebSocket-only call stays on the node.
   */
  #askedAtHead(outgoing: UpstreamMessage): boolean {
    const { headAsk, servedHead } = this.#options;
    const head = this.#node.health.head;
    if (headAsk === undefined || servedHead === undefined || head === undefined) return false;
    const served = servedHead();
    const { calls } = outgoing;
    if (calls.length === 0) return false;
    const moreFinal = this.#options.moreFinalThan?.(this.#node);
    if (head >= served && moreFinal === undefined) return false;
    for (const call of calls) {
      const pending = call.id === undefined ? undefined : this.#pending.get(call.id);
      if (pending?.kind !== "call" || pending.write || call.access === "websocket") return false;
    }
    const need = readNeed(this.#policy.reads, this.#options.mounted.mount.head, calls, !outgoing.batch);
    if (need === undefined || need.handle !== undefined || need.makesHandle) return false;
    const atLeast = Math.max(need.atHead ? served : -1, need.highestBlock);
    const final = need.atFinalized ? moreFinal : undefined;
    if (atLeast <= head && final === undefined) return false;
    const text = outgoing.text ?? this.#sender.build(calls, outgoing.batch);
    const ids = calls.map((call) => call.id as string);
    const asked = headAsk(text, ids, outgoing.batch, atLeast, final, (answer, failedHere) => {
      if (this.#closed) return;
      for (const [id, code] of failedHere ?? []) this.#pending.failedHere(id, code);
      this.#fromUpstream(Buffer.from(answer), false, true);
    });
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

  #fromUpstream(data: RawData, isBinary: boolean, fromArchive = false): void {
    this.#liveness.touch();
    // Notifications with nothing pending pass straight through, never decoded: with nothing to watch, or
    // for the connection's only subscription, whose position is read from its last one if a move needs it.
    if (this.#pending.size === 0 && this.#calls.size === 0) {
      const solo = this.#remembered.watching ? this.#remembered.solo() : undefined;
      if (!this.#remembered.watching || solo !== undefined) {
        if (solo !== undefined) {
          const idMember = this.#remembered.rules?.idMember ?? "";
          const pushed = Buffer.isBuffer(data) ? data : toText(data);
          solo.passedOn(pushed, idMember);
          const { kind } = solo;
          if (kind !== undefined)
            this.#learnHead(() => solo.pushedHeight(pushed, idMember), kind.heads?.finalized === true);
        }
        this.#toClient(data, isBinary);
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
      (id) => this.#pending.failedHere(id, "UPSTREAM_RESPONSE_TOO_LARGE"),
    );
    if (text === undefined) return;
    let envelopes = scanMembers(text);
    // a read the node no longer has the state for, from the archive nodes when the key may reach them
    const ask = this.#options.archiveAsk;
    if (!fromArchive && ask !== undefined && this.#missingState !== undefined) {
      const missing = missingStateIds(this.#missingState, text, envelopes).filter(
        (id) => this.#pending.get(id) !== undefined,
      );
      if (missing.length > 0 && plainReadsBeside(this.#pending, envelopes, missing)) {
        askArchive(this.#host, ask, envelopes, missing, text.trimStart().startsWith("["));
        return;
      }
    }
    // an answer over the cap goes on as the errors that replace it; one of no such state as ARCHIVE_REQUIRED
    // (an archive node's own "no such state", for a key that reached it, is its answer, as over HTTP)
    let answer = fromArchive
      ? text
      : (this.#archiveRefusals?.(text, envelopes, (id) => this.#pending.failedHere(id, "ARCHIVE_REQUIRED")) ??
        text);
    // a node's error about an id it could not read names no call: the call (or batch) it is answered with
    // it by its own id, else the client would wait for it, and the call hold its slot, for ever
    const owned = envelopes.length === 1 ? this.#pending.nullIdAnswer(envelopes[0]) : undefined;
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
      if (id !== undefined && this.#calls.settle(id, text, only)) return;
    }
    // before the cache may keep it (settle): an answer a block past the label's served head moves it first
    if (!fromArchive) this.#learnHeights(envelopes, text);
    const answered = this.#pending.settle(envelopes, this.#host);
    const renamed = this.#pending.renamedAnswers(envelopes, text);
    const merged = this.#pending.merged(renamed ?? answer, answered);
    const sent = merged ?? renamed ?? out;
    this.#toClient(sent, sent === data && isBinary);
    this.#intake.closeIfSpent();
    this.#choice.answered();
  }

  /** The calls of the connection's own node's answer that it answered with a result, told to the label. */
  #learnHeights(envelopes: readonly ReadonlyMap<string, string>[], text: string): void {
    const learn = this.#options.learnHeights;
    if (learn === undefined) return;
    const calls: PassedCall[] = [];
    for (const members of envelopes) {
      const id = members.get("id");
      const pending = id === undefined || !members.has("result") ? undefined : this.#pending.get(id);
      if (pending?.kind === "call") calls.push(pending.call);
    }
    if (calls.length > 0) learn(this.#node, calls, !text.trimStart().startsWith("["), text);
  }

  #notification(text: string, members: ReadonlyMap<string, string>): void {
    const found = this.#remembered.notified(members);
    if (found === undefined) {
      this.#toClient(text, false);
      return;
    }
    const { subscription, result } = found;
    const { kind } = subscription;
    if (kind !== undefined)
      this.#learnHead(() => subscription.shownHeight(result), kind.heads?.finalized === true);
    // a runtime upgrade: the client asks the new metadata next, on this socket, and reads the node's own
    if (subscription.headChange) this.#options.headChanged?.(this.#node, result);
    deliver(subscription, result, text, this.#fill);
    // the node has ended it (registry `ends`): it pins the connection no more, nor holds a subscription slot
    if (subscription.endsWith(result)) this.#remembered.remove(subscription);
  }

  /**
   * A header the node pushed, or an event's block, is told to the label before the client has it: its
   * served head, and the answers the cache keeps at the head, move to it first, else the client told block
   * N+1 read N back from the cache on the same socket. A finalized header's block is one the node has, no lower head, and one it
   * holds final: the label's next read at the finalized tag goes to a node at least as final.
   */
  #learnHead(height: () => number | undefined, finalized: boolean): void {
    this.#options.learnHead?.(this.#node, height, finalized);
  }

  /** Remembers a subscription the node made: the id the client is to know it by. */
  #remember(call: PassedCall, id: string): string {
    const subscription = this.#remembered.add(
      call.method,
      call.call.members.get("params"),
      paramsOf(call),
      id,
    );
    if (subscription.kind?.events !== undefined) recordStart(subscription, this.#fill);
    return subscription.clientId;
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
    const byMessage = new Map<UpstreamMessage, string[]>();
    for (const pending of this.#pending.values()) {
      const { message, call } = pending;
      if (!pending.write || !message.sent || call.id === undefined) continue;
      const answer = rpcErrorJson(
        "WRITE_NOT_CONFIRMED",
        call.id,
        { reason },
        this.#options.mounted.admitted.requestId,
        errorFormOf(this.#policy, false),
      );
      byMessage.set(message, [...(byMessage.get(message) ?? []), answer]);
    }
    for (const [message, answers] of byMessage)
      this.#toClient(message.batch ? `[${answers.join(",")}]` : (answers[0] as string), false);
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
      this.#connection.#fromUpstream(Buffer.from(text), false, true);
    }

    // what the node's answers to subscribe and unsubscribe calls change in the remembered subscriptions
    subscribed(call: PassedCall, upstreamId: string): string {
      return this.#connection.#remember(call, upstreamId);
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
type ConnectionHost = SenderHost & IntakeHost & ChoosingConnection & ArchiveAsking & Settled;

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
