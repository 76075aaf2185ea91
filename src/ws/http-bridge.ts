import { EventEmitter } from "node:events";
import type { Dispatcher } from "undici";
import type { RawData } from "ws";
import type { Limits } from "../config/types.js";
import { type ErrorForm, rpcErrorJson } from "../errors/respond.js";
import { type ErrorCode, GatewayError, type RpcErrorCode } from "../errors/table.js";
import { REQUEST_ID_HEADER } from "../http/request-id.js";
import { scanMembers } from "../jsonrpc/scan.js";
import type { HeldCalls } from "../limits/held-calls.js";
import type { NodeErrors } from "../registry/types.js";
import { describeFailure, failureKind, toGatewayError } from "../upstream/failure.js";
import type { UpstreamGroup } from "../upstream/group.js";
import { type CappedOptions, StartNoted } from "../upstream/interceptors.js";
import { isNodesAnswer } from "../upstream/node-errors.js";
import { nodesForSocket } from "../upstream/policy.js";
import { masksAnswer } from "../upstream/response-relay.js";
import { requestOn } from "../upstream/undici-pool.js";
import { type Upstream, upstreamPath } from "../upstream/upstreams.js";
import { toText } from "./message-intake.js";
import type { NodeSocket } from "./node-socket.js";

/** Why a write the bridge answers UPSTREAM_TIMEOUT may be sent again. */
const NEVER_SENT = "the write waited for a free connection to its node, and was never sent";

/** A dialect's long-poll methods and its node's hold (registry `longPolls`). */
export interface LongPolls {
  readonly methods: ReadonlySet<string>;
  readonly heldMs: number;
  /** The caller's slots for held calls, which its HTTP long polls and streams take too. */
  readonly slots?: { readonly calls: HeldCalls; readonly caller: string } | undefined;
}

const OPEN = 1;
const CLOSED = 3;
/** The close code a bridge reports when its node failed: no close frame, as for a socket that broke. */
const ABNORMAL = 1006;

/**
 * The node side of a WebSocket connection whose node software has no WebSocket server (registry
 * `webSocketOverHttp`: nearcore, stellar-rpc, toncenter, java-tron's /jsonrpc). Each message the
 * connection sends is one HTTP POST to the node, at the path an HTTP caller's call at the mount reaches,
 * and the node's answer comes back as the socket's message; the connection's checks, cache, ledger of
 * calls and move to another node work on it as on a real socket. A node that cannot be reached "closes"
 * it (1006): the connection moves, its reads are asked again on another node and its writes are answered
 * WRITE_NOT_CONFIRMED, never sent twice; the message it refused reached no node, and goes again whole. A request the node breaks, does not answer in time, or answers
 * with nothing a caller can use is that message's alone: its calls get the error an HTTP caller would get,
 * the others in flight go on, and the connection stays (docs/websocket.md).
 */
export class HttpBridge extends EventEmitter implements NodeSocket {
  readonly OPEN = OPEN;
  readonly CONNECTING = 0;
  readyState = OPEN;
  /** Each message goes as an HTTP request of its own, at once: none waits on a socket the node reads. */
  readonly bufferedAmount = 0;
  readonly #upstream: Upstream;
  readonly #path: string;
  readonly #headers: Record<string, string>;
  readonly #limits: Limits["upstream"];
  /** The dialect's writes: a write the node did not answer usably may have been taken (WRITE_NOT_CONFIRMED). */
  readonly #writes: ReadonlySet<string>;
  /** The dialect's error shape (nearcore's causes), for the errors the bridge writes. */
  readonly #errorForm: ErrorForm;
  /** The connection's request id, which its errors carry. */
  readonly #requestId: string | undefined;
  /** The dialect's long polls (registry `longPolls`: nearcore's `tx` with `wait_until`), which its node holds. */
  readonly #longPolls: LongPolls | undefined;
  /** How the node answers a call's own errors at a 5xx (registry `nodeErrors`): its answer, not its failure. */
  readonly #nodeErrors: NodeErrors | undefined;
  /** Requests at the node, aborted when the bridge closes. */
  readonly #inFlight = new Set<AbortController>();

  constructor(
    upstream: Upstream,
    mountPath: string,
    headers: Readonly<Record<string, string>>,
    limits: Limits["upstream"],
    writes: ReadonlySet<string>,
    errorForm: ErrorForm = "2.0",
    longPolls?: LongPolls,
    nodeErrors?: NodeErrors,
  ) {
    super();
    this.#nodeErrors = nodeErrors;
    this.#upstream = upstream;
    this.#writes = writes;
    this.#longPolls = longPolls;
    this.#errorForm = errorForm;
    this.#requestId = headers[REQUEST_ID_HEADER];
    this.#path = upstreamPath(upstream, mountPath, "");
    // the upgrade's request id and trace, then the node's own headers, as over HTTP
    this.#headers = { ...headers, "content-type": "application/json", ...upstream.headers };
    this.#limits = limits;
  }

  send(text: string): void {
    if (this.readyState !== OPEN) return;
    const controller = new AbortController();
    this.#inFlight.add(controller);
    const heldMs = this.#heldMs(text);
    const slots = heldMs > 0 ? this.#longPolls?.slots : undefined;
    try {
      slots?.calls.take(slots.caller);
    } catch (error) {
      // past the caller's held calls: its calls get the refusal by id, and nothing goes to the node
      this.#inFlight.delete(controller);
      this.#answerEach(text, error as GatewayError);
      return;
    }
    const { health } = this.#upstream;
    if (heldMs > 0) health.held += 1;
    // the message's whole wait, a free connection's included (undici's headers timeout starts only once
    // the request is written), as a call's deadline bounds it over HTTP; a hedge's delay later than that
    // timeout, so a node that hangs a message it was sent is still told by it
    let done = false;
    /** undici took the request to a connection: before that, it reached no node (a write may go again). */
    const sent = { started: false };
    const settled = (): boolean => {
      if (done) return false;
      done = true;
      clearTimeout(deadline);
      if (heldMs > 0) health.held -= 1;
      slots?.calls.release(slots.caller);
      this.#inFlight.delete(controller);
      return true;
    };
    // undici rejects a request aborted while it waits for a connection only once it gets one: the
    // message's calls get their error now
    const deadline = setTimeout(
      () => {
        controller.abort(new GatewayError("UPSTREAM_TIMEOUT"));
        if (settled() && this.readyState === OPEN)
          this.#answerEach(text, new GatewayError("UPSTREAM_TIMEOUT"), sent.started);
      },
      this.#limits.deadlineMs + heldMs + this.#limits.hedgeMaxMs,
    );
    this.#post(text, heldMs, controller.signal, sent).then(
      ({ status, answer }) => {
        if (!settled() || this.readyState !== OPEN) return;
        // as over HTTP (call-run.ts), a 5xx or a 429 counts against the node's health, but for the node's own
        // answer to the call at its error status (node-errors.ts)
        const rules = this.#nodeErrors;
        const nodesAnswer = rules !== undefined && status === rules.status && isNodesAnswer(answer, rules);
        if ((status >= 500 || status === 429) && !nodesAnswer)
          this.#upstream.health.failed("status", `HTTP ${status}`);
        if (answersCalls(answer, text)) {
          this.emit("message", Buffer.from(withCallId(answer, text)), false);
          return;
        }
        // nothing, not JSON (a balancer's HTML page), or JSON that answers no call (a rate limiter's
        // {"ok":false,…}, or the node's own error, which names no call: ton-http-api's): each call with an id
        // gets the error, as an HTTP caller would, with the node's own error as it came; a notification's
        // answer is rightly empty
        this.#answerEach(
          text,
          new GatewayError(
            "UPSTREAM_BAD_RESPONSE",
            nodesAnswer ? { status, answer: nodeErrorBody(answer) } : { status },
          ),
        );
      },
      (error: unknown) => {
        if (!settled() || this.readyState !== OPEN) return;
        const failure = error instanceof Error ? error : new Error(String(error));
        const kind = failureKind(failure);
        // before the node's failure, which may move the connection at once
        if (kind === "refused") this.emit("undelivered", text);
        if (kind !== undefined) this.#upstream.health.failed(kind, describeFailure(failure));
        // A node that cannot be reached takes no call: the connection moves. A request it broke, did not
        // answer in time or answered past the cap is that message's alone (each POST stands apart): its
        // calls get the error, and the others in flight go on.
        if (kind === "refused") this.#broke(failure);
        else this.#answerEach(text, toGatewayError(failure));
      },
    );
  }

  /**
   * Each call of a message the node did not answer usably gets `error` by its id: a write
   * WRITE_NOT_CONFIRMED, since the node may have taken it, unless it was never `sent` (it waited for a free
   * connection to its node), as over HTTP (call-run.ts). Nothing for notifications.
   */
  #answerEach(text: string, error: GatewayError, sent = true): void {
    const answers: string[] = [];
    const failedHere = new Map<string, ErrorCode>();
    for (const call of scanMembers(text)) {
      const id = call.get("id");
      if (id === undefined) continue;
      const write = this.#writes.has(methodOf(call));
      const code = write && sent ? "WRITE_NOT_CONFIRMED" : error.code;
      const detail = write && !sent ? { ...error.detail, reason: NEVER_SENT } : error.detail;
      answers.push(rpcErrorJson(code as RpcErrorCode, id, detail, this.#requestId, this.#errorForm));
      failedHere.set(id, code);
    }
    if (answers.length === 0) return;
    const batch = text.trimStart().startsWith("[");
    // the errors are the gateway's, not the node's answer: the connection counts them as such (no cost)
    const message = Buffer.from(batch ? `[${answers.join(",")}]` : (answers[0] as string));
    this.emit("message", message, false, failedHere);
  }

  close(): void {
    this.terminate();
  }

  terminate(): void {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSED;
    for (const controller of this.#inFlight) controller.abort();
    this.#inFlight.clear();
  }

  async #post(
    text: string,
    heldMs: number,
    signal: AbortSignal,
    sent: { started: boolean },
  ): Promise<{ status: number; answer: string }> {
    // a long poll has its node's hold more to answer in, on the pool of held calls (upstreams.ts), as over HTTP
    const options: Dispatcher.RequestOptions & CappedOptions = {
      method: "POST",
      path: this.#path,
      headers: this.#headers,
      body: text,
      headersTimeout: this.#limits.headersTimeoutMs + heldMs,
      bodyTimeout: this.#limits.bodyTimeoutMs,
      signal,
      maxResponseBytes: this.#limits.maxResponseBytes,
    };
    const on = heldMs > 0 ? this.#upstream.streamDispatch : this.#upstream.dispatch;
    const dispatch: typeof on = (opts, handler) =>
      on(
        opts,
        new StartNoted(handler, () => {
          sent.started = true;
        }),
      );
    const { statusCode, headers, body } = await requestOn({ dispatch } as Dispatcher, options);
    const answer = await body.text();
    // a refusal quoting the upstream's secrets goes to the socket masked, as over HTTP (response-relay.ts)
    const masked = masksAnswer(this.#upstream, statusCode, headers);
    return { status: statusCode, answer: masked ? this.#upstream.redact(answer) : answer };
  }

  /** How long the node may hold a message with a long poll in it; 0 for any other. */
  #heldMs(text: string): number {
    const longPolls = this.#longPolls;
    if (longPolls === undefined) return 0;
    // most messages name none of the few long-poll methods: found without decoding anything
    if (![...longPolls.methods].some((method) => text.includes(`"${method}"`))) return 0;
    return scanMembers(text).some((call) => longPolls.methods.has(methodOf(call))) ? longPolls.heldMs : 0;
  }

  /** The node failed a message: the connection learns it as a socket that broke, and moves. */
  #broke(why: Error): void {
    this.terminate();
    this.emit("close", ABNORMAL, Buffer.from(why.message));
  }
}

/**
 * A single call's answer with the call's own id. toncenter's Python server answers the id 7 as "7" (its
 * request model types the id as a string): a caller over HTTP gets that as the node sent it, but on a
 * socket the connection pairs answers with calls by id, and an HTTP request has exactly one answer, so
 * the bridge gives it back the id it was sent with.
 */
function withCallId(answer: string, call: string): string {
  if (!call.trimStart().startsWith("{") || !answer.trimStart().startsWith("{")) return answer;
  const id = scanMembers(call)[0]?.get("id");
  const members = scanMembers(answer)[0];
  if (id === undefined || members === undefined || !members.has("id") || members.get("id") === id)
    return answer;
  const parts: string[] = [];
  for (const [name, value] of members) parts.push(`${JSON.stringify(name)}:${name === "id" ? id : value}`);
  return `{${parts.join(",")}}`;
}

/** A call's method, from its raw member: "" when it has none that is a string. */
function methodOf(call: ReadonlyMap<string, string>): string {
  try {
    const method: unknown = JSON.parse(call.get("method") ?? '""');
    return typeof method === "string" ? method : "";
  } catch {
    return "";
  }
}

/**
 * Whether the node's answer answers the message's calls: an array for a batch, an object with an id (or
 * an error, as a parse error's `id: null`) for one call.
 */
function answersCalls(answer: string, call: string): boolean {
  if (!startsJson(answer)) return false;
  const batch = call.trimStart().startsWith("[");
  if (answer.trimStart().startsWith("[")) return batch;
  const members = scanMembers(answer)[0];
  return !batch && members !== undefined && (members.has("id") || members.has("result"));
}

/** Whether an answer's text is a JSON object or array, as every JSON-RPC answer is. */
function startsJson(text: string): boolean {
  const first = text.trimStart()[0];
  return first === "{" || first === "[";
}

/**
 * The node side of a new connection on a group whose nodes have no WebSocket server: a bridge to the
 * group's chosen node, at once (there is no handshake to wait for), or NO_UPSTREAM as openWebSocket
 * gives it.
 */
export function openHttpBridge(
  group: UpstreamGroup,
  limits: Limits,
  mount: {
    readonly path: string;
    readonly writes: ReadonlySet<string>;
    readonly errorForm: ErrorForm;
    readonly longPolls?: LongPolls | undefined;
    readonly nodeErrors?: NodeErrors | undefined;
  },
  wanted: () => boolean,
  callback: (error: GatewayError | undefined, socket?: NodeSocket, upstream?: Upstream) => void,
  headers: Readonly<Record<string, string>> = {},
  besides?: Upstream,
): void {
  const order = nodesForSocket(
    group,
    limits,
    wanted,
    callback,
    () => openHttpBridge(group, limits, mount, wanted, callback, headers, besides),
    besides,
  );
  const upstream = order?.[0];
  if (upstream !== undefined)
    callback(
      undefined,
      new HttpBridge(
        upstream,
        mount.path,
        headers,
        limits.upstream,
        mount.writes,
        mount.errorForm,
        mount.longPolls,
        mount.nodeErrors,
      ),
      upstream,
    );
}

/** A node's own error body (JSON, judged so), as an error's data carries it: its words, not a page of them. */
function nodeErrorBody(answer: string): unknown {
  return answer.length > 4096 ? undefined : (JSON.parse(answer) as unknown);
}

/** What a call a connection asks over HTTP, beside its node, takes of its mount and of the deployment. */
export interface BridgedMount {
  readonly path: string;
  readonly writes: ReadonlySet<string>;
  readonly errorForm: ErrorForm;
  readonly nodeErrors: NodeErrors | undefined;
  readonly limits: Limits;
  /** The upgrade's request id and trace headers, as the connection's node gets them. */
  readonly headers: Readonly<Record<string, string>>;
  readonly requestId: string | undefined;
}

/**
 * Sends one call on a bridge to a node and calls back once with its answer, or with `unanswered()` when
 * the bridge "closes" (1006: its node could not be reached); the bridge is closed after. `failedHere`: the
 * calls, by id, the bridge answered with the gateway's own error (a node that failed them), not the node.
 */
export function askOnce(
  bridge: NodeSocket,
  callText: string,
  unanswered: () => string,
  answered: (answer: string, failedHere?: ReadonlyMap<string, ErrorCode>) => void,
): void {
  let done = false;
  const finish = (answer: string, failedHere?: ReadonlyMap<string, ErrorCode>): void => {
    if (done) return;
    done = true;
    bridge.close();
    answered(answer, failedHere);
  };
  bridge.on("message", (data: RawData, _isBinary: boolean, failedHere?: ReadonlyMap<string, ErrorCode>) =>
    finish(toText(data), failedHere),
  );
  bridge.on("close", () => finish(unanswered()));
  bridge.send(callText);
}
