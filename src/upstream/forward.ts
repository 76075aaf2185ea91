import type { ServerResponse } from "node:http";
import type { Dispatcher } from "undici";
import { type ErrorCode, GatewayError } from "../errors/table.js";
import { clientGone, clientGoneSignal } from "../http/client-gone.js";
import { ResponseRelay } from "./response-relay.js";
import { request as undiciRequest } from "./undici-core.js";
import { type Upstream, type UpstreamGroup, upstreamPath } from "./upstreams.js";

export interface ForwardRequest {
  readonly method: Dispatcher.HttpMethod;
  readonly path: string;
  readonly query: string;
  /** Built from an allow-list by the caller; never the client's Host, cookies or credentials. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string | Buffer | undefined;
  /** A long-lived stream: no body timeout, chunks flushed as they arrive. */
  readonly stream: boolean;
}

export interface UpstreamResponse {
  readonly upstream: Upstream;
  readonly data: Dispatcher.ResponseData;
}

// Only failures where the request cannot have reached the node are retried on the next upstream.
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "UND_ERR_CONNECT_TIMEOUT",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "EAI_AGAIN",
]);
const MAX_ATTEMPTS = 2;

/** Sends to the group's next upstream; fails over once when the first could not be reached. */
export function sendUpstream(
  group: UpstreamGroup,
  request: ForwardRequest,
  res: ServerResponse,
): Promise<UpstreamResponse> {
  const { signal, release } = clientGoneSignal(res);
  return new Promise<UpstreamResponse>((resolve, reject) =>
    withFailover<UpstreamResponse>(
      group,
      res,
      (upstream, done) => {
        undiciRequest(upstream.dispatcher, { ...options(upstream, request), signal }).then(
          (data) => done(undefined, { upstream, data }),
          done,
        );
      },
      (error, value) => (error === undefined ? resolve(value as UpstreamResponse) : reject(error)),
    ),
  ).finally(release);
}

/** Called once when a relay is over: with nothing when the answer went out whole, else with why not. */
export type RelayDone = (error?: unknown) => void;

/**
 * Relays the upstream's answer (status, passed headers, body) into `res` as it arrives, with
 * backpressure (response-relay.ts), failing over like `sendUpstream`, and calls `done` once; `note.upstream`
 * names the upstream tried last, for the access log. Past `maxBytes` the upstream request is aborted and
 * the client's connection cut, since its status line is gone. A callback, not a promise: this is the data
 * plane's hot path, and each promise and reaction per request showed in the profile (bench/README.md).
 */
export function relayUpstream(
  group: UpstreamGroup,
  request: ForwardRequest,
  res: ServerResponse,
  maxBytes: number,
  note: { upstream: string | undefined },
  done: RelayDone,
): void {
  withFailover<void>(
    group,
    res,
    (upstream, attempted) => {
      note.upstream = upstream.name;
      const settle = (error?: unknown) => {
        if (error === undefined || !res.headersSent) return attempted(error);
        // The status line is gone: all that is left is to cut the connection.
        const gone = clientGone(res);
        res.destroy();
        attempted(gone ? new GatewayError("CLIENT_CLOSED") : error);
      };
      upstream.dispatcher.dispatch(
        options(upstream, request),
        new ResponseRelay({ res, maxBytes, flushHeaders: request.stream, settle }),
      );
    },
    done,
  );
}

/**
 * Tries the group's upstreams in order; moves on only when the request cannot have reached the node.
 * `callback` gets the value, or the last failure as a GatewayError.
 */
function withFailover<T>(
  group: UpstreamGroup,
  res: ServerResponse,
  attempt: (upstream: Upstream, done: (error: unknown, value?: T) => void) => void,
  callback: (error: GatewayError | undefined, value?: T) => void,
): void {
  const order = group.order();
  let tried = 0;
  const done = (error: unknown, value?: T) => {
    if (error === undefined) return callback(undefined, value);
    if (tried < order.length && tried < MAX_ATTEMPTS && mayRetry(error, res)) return next();
    callback(failure(error));
  };
  const next = () => {
    try {
      attempt(order[tried++] as Upstream, done);
    } catch (error) {
      done(error);
    }
  };
  next();
}

/** Only failures where the request cannot have reached the node, whose client is still there and unanswered. */
function mayRetry(error: unknown, res: ServerResponse): boolean {
  return (
    !(error instanceof GatewayError) && !res.headersSent && !clientGone(res) && NOT_SENT.has(errorCode(error))
  );
}

function failure(error: unknown): GatewayError {
  return error instanceof GatewayError ? error : toGatewayError(error);
}

function options(upstream: Upstream, request: ForwardRequest): Dispatcher.DispatchOptions {
  return {
    method: request.method,
    path: upstreamPath(upstream, request.path, request.query),
    headers: upstream.hasHeaders ? { ...request.headers, ...upstream.headers } : request.headers,
    body: request.body ?? null,
    // null leaves the pool's own bodyTimeout
    bodyTimeout: request.stream ? 0 : null,
  };
}

/** Reads a whole upstream body, up to the cap, for answers the gateway must merge (partial batches). */
export async function readUpstreamBody(data: Dispatcher.ResponseData, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let seen = 0;
  try {
    for await (const chunk of data.body) {
      seen += (chunk as Buffer).length;
      if (seen > maxBytes) throw new GatewayError("UPSTREAM_RESPONSE_TOO_LARGE", { maxBytes });
      chunks.push(chunk as Buffer);
    }
  } catch (error) {
    data.body.destroy();
    throw error instanceof GatewayError ? error : toGatewayError(error);
  }
  return Buffer.concat(chunks);
}

export function toGatewayError(error: unknown): GatewayError {
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
