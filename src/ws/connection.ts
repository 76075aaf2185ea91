import type { RawData, WebSocket } from "ws";
import type { GatewayConfig, Limits } from "../config/types.js";
import { errorBody } from "../errors/respond.js";
import { type ErrorCode, GatewayError } from "../errors/table.js";
import { type CallRules, type Checked, refuse, sendableAsReceived } from "../jsonrpc/check.js";
import { mergeBatchAnswer } from "../jsonrpc/merge.js";
import { type CheckedMessage, checkMessage } from "../jsonrpc/message.js";
import { scanMembers } from "../jsonrpc/scan.js";
import type { UsageRecorder } from "../keys/usage.js";
import type { GatewayMetrics } from "../metrics/gateway-metrics.js";
import type { Mounted, Stages } from "../pipeline/stages.js";
import { CLOSE } from "./close-codes.js";

export interface ConnectionOptions {
  readonly stages: Stages;
  /** The connection's stage 3 value, from its upgrade. */
  readonly mounted: Mounted;
  readonly support: GatewayConfig["support"];
  readonly limits: Limits;
  readonly metrics: GatewayMetrics | undefined;
  readonly usage: UsageRecorder | undefined;
  readonly onClose: () => void;
}

type Pending = "call" | "subscribe" | "unsubscribe";

/**
 * One client connection and its own upstream connection, so the node's subscription semantics hold as
 * they are. Both directions are handled synchronously in arrival order, so order is preserved, and
 * notifications are passed on the moment they arrive. Every client message passes stages 4, 5 and 7 of
 * the pipeline (pipeline/stages.ts), with the same checks as over HTTP.
 */
export class Connection {
  readonly #client: WebSocket;
  readonly #upstream: WebSocket;
  readonly #options: ConnectionOptions;
  readonly #rules: CallRules;
  readonly #label: string;
  /** Raw id token of each call sent upstream and not answered yet. */
  readonly #pending = new Map<string, Pending>();
  #subscriptions = 0;
  #reservedSubscriptions = 0;
  /** Batches with refused calls: the node's answer to the rest is merged with the refusals. */
  readonly #partialBatches: { ids: Set<string>; refused: string[] }[] = [];
  #alive = true;
  #closed = false;
  readonly #ping: NodeJS.Timeout;
  #idle: NodeJS.Timeout;

  constructor(client: WebSocket, upstream: WebSocket, options: ConnectionOptions) {
    this.#client = client;
    this.#upstream = upstream;
    this.#options = options;
    const { mounted } = options;
    this.#label = mounted.admitted.endpoint.label;
    this.#rules = {
      policy: mounted.mount.policy.jsonrpc as NonNullable<typeof mounted.mount.policy.jsonrpc>,
      plan: mounted.admitted.principal?.plan,
      support: options.support,
      transport: "websocket",
    };
    client.on("message", (data) => this.#fromClient(data));
    upstream.on("message", (data, isBinary) => this.#fromUpstream(data, isBinary));
    client.on("pong", () => {
      this.#alive = true;
    });
    client.on("close", (code) => this.#end("client", code));
    upstream.on("close", (code) => this.#end("upstream", code));
    client.on("error", () => this.#end("client", CLOSE.INTERNAL));
    upstream.on("error", () => this.#end("upstream", CLOSE.BAD_GATEWAY));
    this.#ping = setInterval(() => this.#heartbeat(), options.limits.ws.pingIntervalMs);
    this.#idle = this.#idleTimer();
  }

  /** Closes both sides with one code, for shutdown (1001) and revocation. */
  close(code: number, reason: string): void {
    if (this.#closed) return;
    this.#client.close(code, reason);
    this.#upstream.close(code === CLOSE.GOING_AWAY ? CLOSE.GOING_AWAY : CLOSE.NORMAL, reason);
    this.#finish();
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
      stages.chargeRate(mounted.admitted, message.checked.length); // 5
      answer = this.#send(message, text); // 7
    } catch (error) {
      if (!(error instanceof GatewayError)) throw error;
      code = error.code;
      answer = errorBody(error, "jsonrpc", replyId);
    }
    const { principal } = mounted.admitted;
    this.#options.metrics?.message(this.#label, method, code, principal !== undefined);
    if (principal !== undefined)
      this.#options.usage?.record(principal.keyId, this.#label, calls, code === undefined ? refused : calls);
    if (answer !== undefined) this.#toClient(answer, false);
  }

  /** Open subscriptions on this connection, for the metrics. */
  get subscriptionCount(): number {
    return this.#subscriptions;
  }

  /** Sends what passed upstream and returns the answer for what did not. */
  #send(message: CheckedMessage, text: string): string | undefined {
    const checked = message.checked.map((call) => this.#admit(call));
    const passed = checked.filter((c) => c.ok);
    const refused = checked.filter((c) => !c.ok).map((c) => c.json);
    if (!message.batch) {
      const only = checked[0] as Checked;
      if (!only.ok) return only.json;
      this.#upstream.send(sendableAsReceived(text, checked) ? text : only.json);
      return undefined;
    }
    if (passed.length === 0) return `[${refused.join(",")}]`;
    this.#upstream.send(
      sendableAsReceived(text, checked) ? text : `[${passed.map((c) => c.json).join(",")}]`,
    );
    if (refused.length === 0) return undefined;
    const ids = new Set(passed.flatMap((c) => (c.ok && c.id !== undefined ? [c.id] : [])));
    // Only notifications went upstream: the node will send nothing to merge into (JSON-RPC 2.0 §6).
    if (ids.size === 0) return `[${refused.join(",")}]`;
    this.#partialBatches.push({ ids, refused });
    return undefined;
  }

  /** Reserves in-flight and subscription slots at the moment a call is sent, so a burst cannot overshoot. */
  #admit(checked: Checked): Checked {
    if (!checked.ok || checked.id === undefined) return checked;
    const limits = this.#options.limits.ws;
    if (this.#pending.size >= limits.maxInFlight) {
      return refuse("TOO_MANY_IN_FLIGHT", checked.id, { maxInFlight: limits.maxInFlight });
    }
    if (checked.access === "subscribe") {
      if (this.#subscriptions + this.#reservedSubscriptions >= limits.maxSubscriptions) {
        return refuse("TOO_MANY_SUBSCRIPTIONS", checked.id, { maxSubscriptions: limits.maxSubscriptions });
      }
      this.#reservedSubscriptions++;
    }
    const kind: Pending =
      checked.access === "subscribe" || checked.access === "unsubscribe" ? checked.access : "call";
    this.#pending.set(checked.id, kind);
    return checked;
  }

  #fromUpstream(data: RawData, isBinary: boolean): void {
    this.#touch();
    // Notifications with nothing pending pass straight through, never decoded.
    if (this.#pending.size === 0) {
      this.#toClient(data, isBinary);
      return;
    }
    const text = toText(data);
    const answered = this.#settle(text);
    const merged =
      this.#partialBatches.length > 0 && answered.length > 0 ? this.#mergeBatch(text, answered) : undefined;
    this.#toClient(merged ?? data, merged === undefined && isBinary);
  }

  /** Clears the pending calls this message answers and updates the subscription count. */
  #settle(text: string): string[] {
    const ids: string[] = [];
    for (const members of scanMembers(text)) {
      const id = members.get("id");
      if (id === undefined || members.has("method")) continue;
      const kind = this.#pending.get(id);
      if (kind === undefined) continue;
      this.#pending.delete(id);
      ids.push(id);
      const ok = members.has("result") && !members.has("error");
      if (kind === "subscribe") {
        this.#reservedSubscriptions--;
        if (ok) this.#subscriptions++;
      } else if (kind === "unsubscribe" && ok && members.get("result") !== "false") {
        this.#subscriptions = Math.max(0, this.#subscriptions - 1);
      }
    }
    return ids;
  }

  #mergeBatch(text: string, answered: readonly string[]): string | undefined {
    const index = this.#partialBatches.findIndex((b) => answered.some((id) => b.ids.has(id)));
    if (index < 0) return undefined;
    const [batch] = this.#partialBatches.splice(index, 1);
    return batch === undefined ? undefined : mergeBatchAnswer(text, batch.refused);
  }

  /** Sends to the client unless it stopped reading: past the buffer bound it is closed, not buffered. */
  #toClient(data: string | RawData, binary: boolean): void {
    if (this.#closed || this.#client.readyState !== this.#client.OPEN) return;
    if (this.#client.bufferedAmount > this.#options.limits.ws.maxBufferedBytes) {
      this.#client.close(CLOSE.POLICY, "send buffer full: the client is not reading");
      // A client that does not read will not read the close frame either.
      setTimeout(() => this.#client.terminate(), 1000).unref();
      this.#end("client", CLOSE.POLICY);
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
    return setTimeout(() => this.close(CLOSE.NORMAL, "idle timeout"), this.#options.limits.ws.idleTimeoutMs);
  }

  /** One side went away: the other is closed too, so nothing is left half-open. */
  #end(side: "client" | "upstream", code: number): void {
    if (this.#closed) return;
    if (side === "upstream") {
      if (this.#client.readyState === this.#client.OPEN)
        this.#client.close(CLOSE.BAD_GATEWAY, `upstream closed (${code})`);
    } else if (
      this.#upstream.readyState === this.#upstream.OPEN ||
      this.#upstream.readyState === this.#upstream.CONNECTING
    ) {
      this.#upstream.close(CLOSE.NORMAL, "client closed");
    }
    this.#finish();
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#ping);
    clearTimeout(this.#idle);
    this.#options.onClose();
  }
}

function toText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString("utf8");
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.from(data).toString("utf8");
}
