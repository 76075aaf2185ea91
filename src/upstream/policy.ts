import type { ServerResponse } from "node:http";
import type { Dispatcher } from "undici";
import { WebSocket } from "ws";
import type { Limits } from "../config/types.js";
import { type ErrorCode, GatewayError } from "../errors/table.js";
import { clientGone } from "../http/client-gone.js";
import { BufferedAnswer, type WholeAnswer } from "./buffered-answer.js";
import { ResponseRelay } from "./response-relay.js";
import { Pool } from "./undici-pool.js";
import { type Upstream, type UpstreamGroup, upstreamPath } from "./upstreams.js";

// The upstream policy, composed here and nowhere else: which upstreams a call tries and in what order
// (`inTurn`), when it moves on to the next, its timeouts, and its size caps. The HTTP relay, the merged
// batch answer and the WebSocket upgrade all go through `inTurn`.

/** One upstream call, as stage 6 (pipeline/stages.ts) planned it. */
export interface UpstreamCall {
  readonly group: UpstreamGroup;
  readonly method: Dispatcher.HttpMethod;
  /** The caller's path below the key, and its query string with its "?" (or ""). */
  readonly path: string;
  readonly query: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Buffer | undefined;
  /** A long-lived stream: no body timeout, chunks flushed as they arrive. */
  readonly stream: boolean;
  /** Past this many answer bytes the call is aborted; Infinity for streams. */
  readonly maxBytes: number;
}

/** At most this many upstreams per call: the one in turn, and the next when that one could not be reached. */
export const MAX_ATTEMPTS = 2;

// Failures where the request cannot have reached the node: the only ones an HTTP call moves on after.
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "UND_ERR_CONNECT_TIMEOUT",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "EAI_AGAIN",
]);

/** Called once when a relay is over: with nothing when the answer went out whole, else with why not. */
export type RelayDone = (error?: GatewayError) => void;

/** Told of each upstream a call tries, for the access log. */
export type OnAttempt = (upstream: Upstream) => void;

/** One keep-alive undici Pool per upstream origin, with every timeout set (undici's defaults are 300 s). */
export function poolPerOrigin(origin: string, limits: Limits["upstream"]): Dispatcher {
  return new Pool(origin, {
    connections: limits.connections,
    connectTimeout: limits.connectTimeoutMs,
    headersTimeout: limits.headersTimeoutMs,
    bodyTimeout: limits.bodyTimeoutMs,
    keepAliveTimeout: 4_000,
    pipelining: 1,
  });
}

/**
 * 7. Relays the upstream's answer (status, passed headers, body) into `res` as it arrives, with
 * backpressure (response-relay.ts). Past `maxBytes` the upstream request is aborted and, once the status
 * line is out, the client's connection cut. A callback, not a promise: this is the data plane's hot path.
 */
export function relayAnswer(
  call: UpstreamCall,
  res: ServerResponse,
  onAttempt: OnAttempt,
  done: RelayDone,
): void {
  inTurn<undefined>(
    call.group,
    (upstream, attempted) => {
      onAttempt(upstream);
      const settle = (error?: Error) => {
        if (error === undefined || !res.headersSent) return attempted(error);
        // The status line is gone: all that is left is to cut the connection.
        const gone = clientGone(res);
        res.destroy();
        attempted(gone ? new GatewayError("CLIENT_CLOSED") : error);
      };
      upstream.dispatcher.dispatch(
        dispatchOptions(upstream, call),
        new ResponseRelay({ res, maxBytes: call.maxBytes, flushHeaders: call.stream, settle }),
      );
    },
    (error) => notSent(error) && !res.headersSent && !clientGone(res),
    done,
  );
}

/** 7, for an answer the gateway must change before it goes out (a partial batch): read whole, up to the cap. */
export function fetchWhole(
  call: UpstreamCall,
  res: ServerResponse,
  onAttempt: OnAttempt,
  callback: (error: GatewayError | undefined, answer?: WholeAnswer) => void,
): void {
  inTurn<WholeAnswer>(
    call.group,
    (upstream, attempted) => {
      onAttempt(upstream);
      upstream.dispatcher.dispatch(
        dispatchOptions(upstream, call),
        new BufferedAnswer(res, call.maxBytes, attempted),
      );
    },
    (error) => notSent(error) && !clientGone(res),
    callback,
  );
}

/**
 * The upstream socket of a WebSocket connection, opened before the client's handshake completes. A
 * socket that does not open has carried no call, so the next upstream is tried whatever the failure,
 * while the client still waits (`wanted`).
 */
export function openWebSocket(
  group: UpstreamGroup,
  limits: Limits,
  wanted: () => boolean,
  callback: (error: GatewayError | undefined, socket?: WebSocket) => void,
): void {
  inTurn<WebSocket>(
    group,
    (upstream, attempted) => {
      const socket = new WebSocket(upstream.wsUrl, {
        perMessageDeflate: false,
        handshakeTimeout: limits.ws.handshakeTimeoutMs,
        maxPayload: limits.upstream.maxResponseBytes,
        headers: { ...upstream.headers },
      });
      socket.once("open", () => attempted(undefined, socket));
      socket.once("error", (error: Error) => {
        socket.terminate();
        const timedOut = /timed out/i.test(error.message);
        attempted(
          new GatewayError(timedOut ? "UPSTREAM_TIMEOUT" : "NO_UPSTREAM", {
            reason: "the upstream WebSocket did not open",
          }),
        );
      });
    },
    wanted,
    callback,
  );
}

/**
 * Tries the group's upstreams in the order it gives, at most MAX_ATTEMPTS of them, moving on only when
 * `retryable` says the failure left nothing behind. `callback` gets the value, or the last failure as a
 * GatewayError.
 */
function inTurn<T>(
  group: UpstreamGroup,
  attempt: (upstream: Upstream, done: (error: Error | undefined, value?: T) => void) => void,
  retryable: (error: Error) => boolean,
  callback: (error: GatewayError | undefined, value?: T) => void,
): void {
  const order = group.order();
  const attempts = Math.min(order.length, MAX_ATTEMPTS);
  let tried = 0;
  const done = (error: Error | undefined, value?: T) => {
    if (error === undefined) return callback(undefined, value);
    if (tried < attempts && retryable(error)) return next();
    callback(toGatewayError(error));
  };
  const next = () => {
    try {
      attempt(order[tried++] as Upstream, done);
    } catch (error) {
      done(error as Error);
    }
  };
  next();
}

function notSent(error: Error): boolean {
  return !(error instanceof GatewayError) && NOT_SENT.has(errorCode(error));
}

function dispatchOptions(upstream: Upstream, call: UpstreamCall): Dispatcher.DispatchOptions {
  return {
    method: call.method,
    path: upstreamPath(upstream, call.path, call.query),
    headers: upstream.hasHeaders ? { ...call.headers, ...upstream.headers } : call.headers,
    body: call.body ?? null,
    // null leaves the pool's own bodyTimeout
    bodyTimeout: call.stream ? 0 : null,
  };
}

/** An upstream failure as the caller sees it; a GatewayError is already one. */
export function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  const code = errorCode(error);
  let mapped: ErrorCode = "UPSTREAM_BAD_RESPONSE";
  if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT") mapped = "UPSTREAM_TIMEOUT";
  else if (NOT_SENT.has(code)) mapped = "NO_UPSTREAM";
  else if (code === "UND_ERR_RES_EXCEEDED_MAX_SIZE") mapped = "UPSTREAM_RESPONSE_TOO_LARGE";
  return new GatewayError(mapped);
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : "";
}
