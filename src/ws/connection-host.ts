import type { RawData, WebSocket } from "ws";
import type { Limits } from "../config/types.js";
import type { CallRules, PassedCall } from "../jsonrpc/check.js";
import type { UsageRecorder } from "../keys/usage.js";
import type { GatewayMetrics } from "../metrics/gateway-metrics.js";
import type { Mounted, Stages } from "../pipeline/stages.js";
import { archiveUnits, type BatchPart, batchParts } from "../plans/compute-units.js";
import type { BodyTest, JsonRpcPolicy } from "../registry/types.js";
import { endMessage } from "../tracing/span-ends.js";
import type { RequestTrace } from "../tracing/tracing.js";
import type { Upstream } from "../upstream/upstreams.js";
import type { CachedCalls, CacheKeep } from "./cached-calls.js";
import type { ConnectionOptions } from "./connection-options.js";
import type { GatewayCalls } from "./gateway-calls.js";
import type { IntakeHost, MessageIntake } from "./message-intake.js";
import type { MessageSeen, MessageSender, SenderHost } from "./message-sender.js";
import type { ConnectionMove, Reconnect } from "./move.js";
import type { ChoosingConnection, NodeChoice } from "./node-choice.js";
import type { NodeIntake, NodeIntakeHost } from "./node-intake.js";
import type { NodeSocket } from "./node-socket.js";
import type { PendingCalls, UpstreamMessage } from "./pending-calls.js";
import type { RememberedSubscriptions, Subscription } from "./subscriptions.js";

/**
 * What a client connection (connection.ts) holds that its parts read or change: its node and socket's
 * state, its ledger of calls, its subscriptions, its settings. One object of plain fields per connection.
 */
export interface ConnectionState {
  readonly client: WebSocket;
  readonly options: ConnectionOptions;
  readonly rules: CallRules;
  readonly policy: JsonRpcPolicy;
  readonly label: string;
  readonly pending: PendingCalls;
  readonly remembered: RememberedSubscriptions;
  readonly calls: GatewayCalls;
  node: Upstream;
  closed: boolean;
  /** A WebSocket-only call went upstream: the node holds state for this connection. */
  stateful: boolean;
  /** The node it last lost (or left): where the writes a move refuses were lost. */
  lostNode: Upstream | undefined;
  /**
   * Made at the connection's first move (move.ts): most connections never move, and what a move needs of
   * the connection is a dozen closures, which every idle connection held (docs/websocket.md).
   */
  move: ConnectionMove | undefined;
}

/** The parts a connection makes with its host, which the host lends each other. */
export interface ConnectionParts {
  readonly sender: MessageSender;
  readonly intake: MessageIntake;
  readonly nodeIntake: NodeIntake;
  /** When it leaves a node that still answers for a better one. */
  readonly choice: NodeChoice;
}

/** What the connection itself does, which its host lends its parts. */
export interface ConnectionActions {
  /** Sends a message upstream, or keeps it while the connection moves or its node reaches the head. */
  transmit(outgoing: UpstreamMessage): void;
  /** Sends to the client unless it stopped reading. */
  toClient(data: string | RawData, binary: boolean): void;
  /** The upstream socket is gone, or the connection leaves its node for `chosen`'s. */
  lose(why: string, chosen?: { readonly socket: NodeSocket; readonly node: Upstream }): void;
  /** A listener whose throw breaks this connection only. */
  guard<A extends unknown[]>(listener: (...args: A) => void): (...args: A) => void;
  /** An unexpected error: logged INTERNAL, answered to the message it broke, and the connection closed. */
  broke(error: unknown, replyId?: string): void;
  /** What a node sent: `fromArchive`, answers another node gave. */
  fromNode(data: RawData, isBinary: boolean, fromArchive?: boolean): void;
  close(code: number, reason: string): void;
  /** The client sent more than `limits.ws.maxBufferedBytes` while it was held `during`: closed with 1008. */
  tooMuchSent(during: string): void;
  /** Whether it holds state only its node has, and so cannot move. */
  holdsNodeState(): boolean;
  /** What `calls` cost in compute units (docs/compute-units.md). */
  unitsOf(calls: readonly PassedCall[]): number;
}

/** What a connection lends its parts. */
export type ConnectionHostPart = SenderHost & IntakeHost & ChoosingConnection & NodeIntakeHost;

/**
 * What the connection lends its parts: its sender, its intake, its choice of a better node, its archive
 * asking and its ledger's settling. One object per connection, whose getters and methods sit on one
 * prototype shared by every connection: an object literal of getters and arrow functions per part and
 * connection held some 8 KB of heap per idle connection (docs/websocket.md).
 */
export class ConnectionHost implements ConnectionHostPart {
  readonly #state: ConnectionState;
  readonly #does: ConnectionActions;
  readonly cachedShare: number;
  /** Set once by the connection, which makes its parts with this host. */
  parts!: ConnectionParts;

  constructor(state: ConnectionState, does: ConnectionActions) {
    this.#state = state;
    this.#does = does;
    this.cachedShare = state.options.mounted.admitted.plan?.cachedShare ?? 1;
  }

  get closed(): boolean {
    return this.#state.closed;
  }
  get node(): Upstream {
    return this.#state.node;
  }
  get pending(): PendingCalls {
    return this.#state.pending;
  }
  get remembered(): RememberedSubscriptions {
    return this.#state.remembered;
  }
  get rules(): CallRules {
    return this.#state.rules;
  }
  get policy(): JsonRpcPolicy {
    return this.#state.policy;
  }
  get refusedWrite(): readonly BodyTest[] | undefined {
    return this.#state.options.mounted.mount.policy.refusedWrite;
  }
  get label(): string {
    return this.#state.label;
  }
  get limits(): Limits {
    return this.#state.options.limits;
  }
  get stages(): Stages {
    return this.#state.options.stages;
  }
  get mounted(): Mounted {
    return this.#state.options.mounted;
  }
  get metrics(): GatewayMetrics | undefined {
    return this.#state.options.metrics;
  }
  get usage(): UsageRecorder | undefined {
    return this.#state.options.usage;
  }
  get trace(): RequestTrace | undefined {
    return this.#state.options.trace;
  }
  get cache(): CachedCalls | undefined {
    return this.#state.options.cache;
  }
  get reconnect(): Reconnect {
    return this.#state.options.reconnect;
  }
  get sender(): MessageSender {
    return this.parts.sender;
  }
  get calls(): GatewayCalls {
    return this.#state.calls;
  }

  // the choice of a better node (node-choice.ts)
  get moving(): boolean {
    return this.#state.move?.moving === true;
  }
  get holdsNodeState(): boolean {
    return this.#does.holdsNodeState();
  }
  get clientOpen(): boolean {
    const client = this.#state.client;
    return client.readyState === client.OPEN;
  }
  untilChoice(): number {
    return this.#state.move?.untilChoice() ?? 0;
  }
  writeWaiting(): boolean {
    for (const pending of this.#state.pending.values()) if (pending.write) return true;
    return false;
  }
  betterThan(node: Upstream): boolean {
    return this.#state.options.betterThan(node);
  }
  moveTo(socket: NodeSocket, node: Upstream): void {
    this.#does.lose("out of rotation", { socket, node });
  }

  // the sender (message-sender.ts) and the intake (message-intake.ts)
  unitsOf(calls: readonly PassedCall[]): number {
    return this.#does.unitsOf(calls);
  }
  archiveExtraOf(calls: readonly PassedCall[]): number {
    const units = this.#does.unitsOf(calls);
    return archiveUnits(units, this.#state.options.mounted.mount.policy.computeUnits) - units;
  }
  stateful(): void {
    this.#state.stateful = true;
  }
  transmit(outgoing: UpstreamMessage): void {
    this.#does.transmit(outgoing);
  }
  toClient(text: string): void {
    this.#does.toClient(text, false);
  }
  relay(data: string | RawData, binary: boolean): void {
    this.#does.toClient(data, binary);
  }
  nodeAnswered(): void {
    this.parts.choice.answered();
  }
  closeIfSpent(): void {
    this.parts.intake.closeIfSpent();
  }
  finish(seen: MessageSeen, answer: string | undefined): void {
    this.parts.intake.finish(seen, answer);
  }
  // as an HTTP request the gateway failed is: a warn line with its code and node, never the key
  failed(seen: MessageSeen): void {
    const state = this.#state;
    const { admitted } = state.options.mounted;
    state.options.logger.log("warn", "websocket message", {
      requestId: admitted.requestId,
      label: state.label,
      key: admitted.principal?.keyId,
      method: seen.method,
      error: seen.code,
      // the node the write was lost at, not the one the connection moved to
      upstream: (state.lostNode ?? state.node).name,
    });
  }
  partsOf(calls: readonly PassedCall[]): BatchPart[] {
    return batchParts(
      this.#state.options.mounted.mount.policy.computeUnits,
      calls.map((call) => call.method),
    );
  }
  guard<A extends unknown[]>(listener: (...args: A) => void): (...args: A) => void {
    return this.#does.guard(listener);
  }
  broke(error: unknown, replyId?: string): void {
    this.#does.broke(error, replyId);
  }
  close(code: number, reason: string): void {
    this.#does.close(code, reason);
  }
  tooMuchSent(during: string): void {
    this.#does.tooMuchSent(during);
  }

  // the archive asking (archive-reads.ts)
  build(call: PassedCall): string {
    return this.parts.sender.build([call], false);
  }
  drop(keep: CacheKeep): void {
    this.#state.options.cache?.drop(keep);
  }
  deliver(text: string): void {
    this.#does.fromNode(Buffer.from(text), false, true);
  }

  // what the node's answers to subscribe and unsubscribe calls change in the remembered subscriptions
  subscribed(call: PassedCall, upstreamId: string): string {
    return this.parts.nodeIntake.remember(call, upstreamId);
  }
  unsubscribed(target: Subscription | undefined): void {
    this.#state.remembered.remove(target);
  }
  wrote(): void {
    this.#state.options.onWrite(this.#state.node);
  }
  made(call: PassedCall, result: string): void {
    const state = this.#state;
    if (state.policy.reads?.handles?.make.includes(call.method) !== true || !result.startsWith('"')) return;
    const name: unknown = JSON.parse(result);
    if (typeof name === "string") state.options.onHandleMade(state.node, name, call);
  }
  kept(keep: CacheKeep, members: ReadonlyMap<string, string>): void {
    this.#state.options.cache?.keep(keep, members, this.#state.node);
  }
  answered(message: UpstreamMessage): void {
    endMessage(message.span, this.#state.label, methodOf(message), undefined);
  }
}

/** A message's method as the metrics and its span name it. */
export function methodOf(message: UpstreamMessage): string {
  return message.batch ? "batch" : (message.calls[0]?.method ?? "other");
}
