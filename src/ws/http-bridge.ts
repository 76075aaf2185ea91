import { EventEmitter } from "node:events";
import type { Dispatcher } from "undici";
import type { Limits } from "../config/types.js";
import type { GatewayError } from "../errors/table.js";
import { scanMembers } from "../jsonrpc/scan.js";
import { describeFailure, failureKind } from "../upstream/failure.js";
import type { UpstreamGroup } from "../upstream/group.js";
import type { CappedOptions } from "../upstream/interceptors.js";
import { nodesForSocket } from "../upstream/policy.js";
import { requestOn } from "../upstream/undici-pool.js";
import { type Upstream, upstreamPath } from "../upstream/upstreams.js";
import type { NodeSocket } from "./node-socket.js";

const OPEN = 1;
const CLOSED = 3;
/** The close code a bridge reports when its node failed: no close frame, as for a socket that broke. */
const ABNORMAL = 1006;

/**
 * The node side of a WebSocket connection whose node software has no WebSocket server (registry
 * `webSocketOverHttp`: nearcore, stellar-rpc, toncenter, java-tron's /jsonrpc). Each message the
 * connection sends is one HTTP POST to the node, at the path an HTTP caller's call at the mount reaches,
 * and the node's answer comes back as the socket's message; the connection's checks, cache, ledger of
 * calls and move to another node work on it as on a real socket. A node that cannot be reached, breaks
 * the request, or answers with something other than JSON "closes" it (1006): the connection moves, its
 * reads are asked again on another node and its writes are answered WRITE_NOT_CONFIRMED, never sent
 * twice (docs/websocket.md).
 */
export class HttpBridge extends EventEmitter implements NodeSocket {
  readonly OPEN = OPEN;
  readonly CONNECTING = 0;
  readyState = OPEN;
  readonly #upstream: Upstream;
  readonly #path: string;
  readonly #headers: Record<string, string>;
  readonly #limits: Limits["upstream"];
  /** Requests at the node, aborted when the bridge closes. */
  readonly #inFlight = new Set<AbortController>();

  constructor(
    upstream: Upstream,
    mountPath: string,
    headers: Readonly<Record<string, string>>,
    limits: Limits["upstream"],
  ) {
    super();
    this.#upstream = upstream;
    this.#path = upstreamPath(upstream, mountPath, "");
    // the upgrade's request id and trace, then the node's own headers, as over HTTP
    this.#headers = { ...headers, "content-type": "application/json", ...upstream.headers };
    this.#limits = limits;
  }

  send(text: string): void {
    if (this.readyState !== OPEN) return;
    const controller = new AbortController();
    this.#inFlight.add(controller);
    this.#post(text, controller.signal).then(
      (answer) => {
        this.#inFlight.delete(controller);
        if (this.readyState !== OPEN) return;
        // a notification's answer is empty: JSON-RPC answers it with nothing
        if (answer.trim() === "") return;
        if (!startsJson(answer)) this.#broke(new Error("the node's answer is not JSON"));
        else this.emit("message", Buffer.from(withCallId(answer, text)), false);
      },
      (error: unknown) => {
        this.#inFlight.delete(controller);
        if (this.readyState !== OPEN) return;
        const failure = error instanceof Error ? error : new Error(String(error));
        const kind = failureKind(failure);
        if (kind !== undefined) this.#upstream.health.failed(kind, describeFailure(failure));
        this.#broke(failure);
      },
    );
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

  async #post(text: string, signal: AbortSignal): Promise<string> {
    const options: Dispatcher.RequestOptions & CappedOptions = {
      method: "POST",
      path: this.#path,
      headers: this.#headers,
      body: text,
      headersTimeout: this.#limits.headersTimeoutMs,
      bodyTimeout: this.#limits.bodyTimeoutMs,
      signal,
      maxResponseBytes: this.#limits.maxResponseBytes,
    };
    const { body } = await requestOn({ dispatch: this.#upstream.dispatch } as Dispatcher, options);
    return body.text();
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
  mountPath: string,
  wanted: () => boolean,
  callback: (error: GatewayError | undefined, socket?: NodeSocket, upstream?: Upstream) => void,
  headers: Readonly<Record<string, string>> = {},
): void {
  const order = nodesForSocket(group, limits, wanted, callback, () =>
    openHttpBridge(group, limits, mountPath, wanted, callback, headers),
  );
  const upstream = order?.[0];
  if (upstream !== undefined)
    callback(undefined, new HttpBridge(upstream, mountPath, headers, limits.upstream), upstream);
}
