import type { RawData } from "ws";
import type { Limits } from "../config/types.js";
import { batchErrorBody, errorBody, jsonRpcStyle } from "../errors/respond.js";
import { GatewayError } from "../errors/table.js";
import type { CallRules, PassedCall } from "../jsonrpc/check.js";
import { batchLayout } from "../jsonrpc/merge.js";
import { type CheckedMessage, checkMessage } from "../jsonrpc/message.js";
import type { UsageRecorder } from "../keys/usage.js";
import type { GatewayMetrics } from "../metrics/gateway-metrics.js";
import type { Mounted, Stages } from "../pipeline/stages.js";
import { batchParts, callsUnits } from "../plans/compute-units.js";
import type { ComputeUnits } from "../registry/types.js";
import { endMessage } from "../tracing/span-ends.js";
import type { RequestTrace } from "../tracing/tracing.js";
import { CLOSE } from "./close-codes.js";
import { clientSize, HeldMessages } from "./held-messages.js";
import { LATER, type MessageSeen, type MessageSender } from "./message-sender.js";
import type { PendingCalls } from "./pending-calls.js";

/** How long a connection whose quota is spent waits for the answers to its calls before it closes. */
const QUOTA_CLOSE_MS = 5_000;

/** A message that waits for its quota's answer from Redis: it is answered and counted then. */
const WAITING = Symbol("waiting for the quota");

/** What a connection lends its intake (connection.ts). */
export interface IntakeHost {
  readonly stages: Stages;
  readonly mounted: Mounted;
  readonly limits: Limits;
  readonly rules: CallRules;
  readonly label: string;
  readonly metrics: GatewayMetrics | undefined;
  readonly usage: UsageRecorder | undefined;
  /** The upgrade's trace, when it was sampled: every message of the connection is traced under it. */
  readonly trace: RequestTrace | undefined;
  readonly pending: PendingCalls;
  readonly sender: MessageSender;
  readonly closed: boolean;
  toClient(text: string): void;
  /** An unexpected error: logged, answered to the message it broke if known, and the connection closed (1011). */
  broke(error: unknown, replyId?: string): void;
  close(code: number, reason: string): void;
  /** The client sent more than `limits.ws.maxBufferedBytes` while it was held `during`: closed with 1008. */
  tooMuchSent(during: string): void;
}

/**
 * Stages 4 and 5 of a connection's client messages (pipeline/stages.ts), in the order they arrive: each is
 * checked, charged against the key's rate and held against its quota, then handed to the sender (stage 7).
 * A message whose quota must be asked of Redis holds back the ones after it, so calls reach the node in the
 * order sent, up to `limits.ws.maxBufferedBytes` of them (past it the connection closes with 1008, as one
 * that sends too much while it moves). Every message is counted once, in the metrics and the key's usage, whatever it ended as; a
 * refusal is answered as its JSON-RPC error, and a spent quota closes the connection (4402) once the calls
 * it was charged for are answered.
 */
export class MessageIntake {
  readonly #host: IntakeHost;
  /** Set once the key's quota is spent: the connection closes when its calls are answered (#refused). */
  #quotaSpent: NodeJS.Timeout | undefined = undefined;
  /** Messages that arrived while one waits for its quota's answer from Redis: held while one waits. */
  readonly #queued = new HeldMessages<RawData>(clientSize);

  constructor(host: IntakeHost) {
    this.#host = host;
  }

  /** A client message: answered, refused, sent on, or queued behind one that waits for its quota. */
  receive(data: RawData): void {
    // a message waits while one before it waits for its quota: calls reach the node in the order sent
    if (this.#queued.holding) {
      if (this.#host.closed) return;
      // held in memory for as long as Redis takes to answer (a lease's deadline when it hangs); what is
      // held goes with the quota's answer, to a connection closed by then
      if (!this.#queued.hold(data, this.#host.limits.ws.maxBufferedBytes))
        this.#host.tooMuchSent("while a message waits for its quota");
      return;
    }
    const text = toText(data);
    const { stages, mounted, limits, rules, sender } = this.#host;
    const seen: MessageSeen = {
      replyId: "null",
      method: "other",
      code: undefined,
      calls: 1,
      refused: 0,
      units: 0,
      heldAt: undefined,
      span: this.#host.trace?.message(),
    };
    this.#answer(seen, () => {
      const message = checkMessage(text, rules, limits); // 4
      seen.replyId = message.replyId;
      seen.calls = message.checked.length;
      seen.refused = message.checked.filter((c) => !c.ok).length;
      const only = message.batch ? undefined : message.checked[0];
      seen.method = message.batch ? "batch" : (only?.method ?? "other");
      if (only !== undefined && !only.ok) seen.code = only.code;
      if (message.batch) seen.batch = batchAnswers(message, mounted.mount.policy.computeUnits);
      seen.units = this.#unitsOf(message);
      const charged = stages.chargeRate(mounted, { ...message, computeUnits: seen.units }); // 5
      const passed = message.checked.filter((c): c is PassedCall => c.ok);
      // a read the archive nodes may answer is held at their price, as over HTTP
      const quotaUnits = stages.socketQuotaUnits(mounted, passed, !message.batch, seen.units);
      const held = stages.holdQuota(mounted, charged, quotaUnits); // 5, the quota
      if (!(held instanceof Promise)) {
        seen.heldAt = held?.heldAt;
        return sender.send(charged, text, seen, held); // 7
      }
      // the quota asked Redis: this message goes on with its answer, the next ones wait for it
      this.#queued.start();
      held.then(
        (hold) => {
          seen.heldAt = hold?.heldAt;
          // its caller left while Redis answered: nothing went, and the units it held go back
          if (this.#host.closed) {
            hold?.settle(0);
            seen.code = "CLIENT_CLOSED";
            this.#counted(seen, undefined);
          }
          this.#afterQuota(seen, () => sender.send(charged, text, seen, hold));
        },
        (error) =>
          this.#afterQuota(seen, () => {
            throw error;
          }),
      );
      return WAITING;
    });
  }

  /** Closes a connection whose quota is spent once nothing it was charged for waits for the node. */
  closeIfSpent(): void {
    const host = this.#host;
    if (this.#quotaSpent === undefined || host.pending.size > 0 || host.sender.following > 0 || host.closed)
      return;
    clearTimeout(this.#quotaSpent);
    host.close(CLOSE.QUOTA_EXCEEDED, "quota exceeded");
  }

  /** A message whose quota was asked of Redis: sent (or refused) now, then the messages that waited. */
  #afterQuota(seen: MessageSeen, send: () => string | undefined | typeof LATER): void {
    const queued = this.#queued.release();
    if (this.#host.closed) return;
    this.#answer(seen, send);
    for (const data of queued) {
      try {
        this.receive(data);
      } catch (error) {
        this.#host.broke(error);
      }
    }
  }

  /**
   * Runs a message's stages: its answer (or none when all of it went upstream) to the client and the
   * counts; a gateway refusal answered as its error; anything else broke the connection.
   */
  #answer(seen: MessageSeen, run: () => string | undefined | typeof WAITING | typeof LATER): void {
    let answer: string | undefined;
    try {
      const ran = run();
      // counted later: once the quota has answered, or the call it waits on has landed (finish)
      if (ran === WAITING || ran === LATER) return;
      answer = ran;
    } catch (error) {
      if (!(error instanceof GatewayError)) {
        this.#host.broke(error, seen.replyId);
        return;
      }
      answer = this.#refused(seen, error);
    }
    this.#counted(seen, answer);
  }

  /**
   * The error's answer. A spent quota (nothing left of it) also ends the connection (4402), as it ends the
   * key's calls: once the calls sent before it, which it was charged for, are answered, or after
   * QUOTA_CLOSE_MS. A message larger than what is left (a batch) is refused alone: smaller ones still fit.
   */
  #refused(seen: MessageSeen, error: GatewayError): string {
    seen.code = error.code;
    const { requestId, policy } = this.#host.rules;
    const style = jsonRpcStyle(policy);
    const answer =
      seen.batch === undefined
        ? errorBody(error, style, seen.replyId, requestId)
        : batchErrorBody(error, seen.batch.ids, seen.batch.refusals, requestId, style);
    if (error.code === "QUOTA_EXCEEDED" && error.detail?.remaining === 0 && this.#quotaSpent === undefined) {
      this.#quotaSpent = setTimeout(
        () => this.#host.close(CLOSE.QUOTA_EXCEEDED, "quota exceeded"),
        QUOTA_CLOSE_MS,
      );
      this.#quotaSpent.unref();
      queueMicrotask(() => this.closeIfSpent());
    }
    return answer;
  }

  /** A message that waited on another's call, counted now that it has its answer (message-sender.ts LATER). */
  finish(seen: MessageSeen, answer: string | undefined): void {
    this.#counted(seen, answer);
  }

  /** The message in the metrics and the key's usage, and its answer to the client. */
  #counted(seen: MessageSeen, answer: string | undefined): void {
    if (seen.counted === true) return;
    seen.counted = true;
    const { label, mounted, metrics, usage } = this.#host;
    const { principal } = mounted.admitted;
    const { code, calls, refused } = seen;
    metrics?.message(label, seen.method, code, principal !== undefined, code === undefined ? seen.units : 0);
    if (seen.sent !== true) endMessage(seen.span, label, seen.method, code);
    // a message whose caller left is neither side's error, as over HTTP
    const failed = code !== undefined && code !== "CLIENT_CLOSED";
    if (principal !== undefined)
      usage?.record(
        principal.keyId,
        label,
        calls,
        failed ? calls : refused,
        code === undefined ? seen.units : 0,
        {
          method: seen.method,
          parts: seen.batch?.parts,
          code: failed ? code : undefined,
          ms: undefined,
          refusedCodes: seen.batch?.codes,
        },
        seen.heldAt,
      );
    if (answer !== undefined) this.#host.toClient(answer);
  }

  /** The compute units of the message's calls that passed their checks (docs/compute-units.md). */
  #unitsOf(message: CheckedMessage): number {
    const { mount, admitted } = this.#host.mounted;
    const methods: string[] = [];
    for (const call of message.checked) if (call.ok) methods.push(call.method);
    return callsUnits(mount.policy.computeUnits, methods, admitted.endpoint);
  }
}

/** A batch's ids of the calls that passed, and the answers of those refused on their own. */
function batchAnswers(message: CheckedMessage, units: ComputeUnits): NonNullable<MessageSeen["batch"]> {
  const ids: string[] = [];
  const codes: string[] = [];
  const methods: string[] = [];
  for (const call of message.checked)
    if (!call.ok) codes.push(call.code);
    else {
      methods.push(call.method);
      if (call.id !== undefined) ids.push(call.id);
    }
  // a notification's refusal is counted, never answered (JSON-RPC 2.0 §4.1)
  const refusals = codes.length === 0 ? [] : batchLayout(message.checked);
  return { ids, refusals, codes, parts: batchParts(units, methods) };
}

/** A WebSocket message as text, from either side of the connection (ws hands it over as one or more Buffers). */
export function toText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString("utf8");
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.from(data).toString("utf8");
}
