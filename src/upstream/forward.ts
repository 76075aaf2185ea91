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
export async function sendUpstream(
  group: UpstreamGroup,
  request: ForwardRequest,
  res: ServerResponse,
): Promise<UpstreamResponse> {
  const { signal, release } = clientGoneSignal(res);
  try {
    return await withFailover(group, res, async (upstream) => ({
      upstream,
      data: await undiciRequest(upstream.dispatcher, { ...options(upstream, request), signal }),
    }));
  } finally {
    release();
  }
}

/**
 * Relays the upstream's answer (status, passed headers, body) into `res` as it arrives, with
 * backpressure (response-relay.ts), failing over like `sendUpstream`; `note.upstream` names the
 * upstream tried last, for the access log. Past `maxBytes` the upstream request is aborted and the client's connection cut, since its
 * status line is gone. One promise per request, not an async function per layer: this is the data
 * plane's hot path, and each await showed in the profile (bench/README.md).
 */
export function relayUpstream(
  group: UpstreamGroup,
  request: ForwardRequest,
  res: ServerResponse,
  maxBytes: number,
  note: { upstream: string | undefined },
): Promise<void> {
  const order = group.order();
  return new Promise<void>((resolve, reject) => {
    let attempt = 0;
    const settle = (error?: unknown) => {
      if (error === undefined) return resolve();
      if (!res.headersSent) {
        if (attempt < order.length && attempt < MAX_ATTEMPTS && mayRetry(error, res)) return send();
        return reject(failure(error));
      }
      // The status line is gone: all that is left is to cut the connection.
      res.destroy();
      reject(clientGone(res) ? new GatewayError("CLIENT_CLOSED") : failure(error));
    };
    const send = () => {
      const upstream = order[attempt++] as Upstream;
      note.upstream = upstream.name;
      const relay = new ResponseRelay({ res, maxBytes, flushHeaders: request.stream, settle });
      try {
        upstream.dispatcher.dispatch(options(upstream, request), relay);
      } catch (error) {
        settle(error);
      }
    };
    send();
  });
}

/** Tries the group's upstreams in order; moves on only when the request cannot have reached the node. */
async function withFailover<T>(
  group: UpstreamGroup,
  res: ServerResponse,
  attempt: (upstream: Upstream) => Promise<T>,
): Promise<T> {
  let last: unknown;
  const order = group.order();
  for (let i = 0; i < order.length && i < MAX_ATTEMPTS; i++) {
    try {
      return await attempt(order[i] as Upstream);
    } catch (error) {
      last = error;
      if (!mayRetry(error, res)) break;
    }
  }
  throw failure(last);
}

/** Only failures where the request cannot have reached the node, and whose client is still there. */
function mayRetry(error: unknown, res: ServerResponse): boolean {
  return !(error instanceof GatewayError) && !clientGone(res) && NOT_SENT.has(errorCode(error));
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
