import type { EventEmitter } from "node:events";
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import { Writable } from "node:stream";
import type { Dispatcher } from "undici";
import { ANY_ORIGIN } from "../errors/respond.js";
import { type ErrorCode, GatewayError } from "../errors/table.js";
import { stream, request as undiciRequest } from "./undici-core.js";
import { type Upstream, type UpstreamGroup, upstreamPath } from "./upstreams.js";

export interface ForwardRequest {
  readonly method: Dispatcher.HttpMethod;
  readonly path: string;
  readonly query: string;
  /** Built from an allow-list by the caller; never the client's Host, cookies or credentials. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
  /** A long-lived stream: no body timeout, chunks flushed as they arrive. */
  readonly stream: boolean;
}

/** What aborts an upstream request when its client goes away (src/http/client-gone.ts). */
export type UpstreamSignal = EventEmitter & { readonly aborted: boolean };

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
  signal: UpstreamSignal,
): Promise<UpstreamResponse> {
  return withFailover(group, signal, async (upstream) => ({
    upstream,
    data: await undiciRequest(upstream.dispatcher, options(upstream, request, signal)),
  }));
}

/**
 * Relays the upstream's answer (status, passed headers, body) into `res` as it arrives, with
 * backpressure: undici's `stream()` writes the body straight into the response, with no Readable in
 * between (the cheapest relay undici offers; bench/README.md has the numbers). Past `maxBytes` the
 * upstream request is aborted and the client's connection cut, since its status line is gone.
 */
export async function relayUpstream(
  group: UpstreamGroup,
  request: ForwardRequest,
  signal: UpstreamSignal,
  res: ServerResponse,
  maxBytes: number,
): Promise<Upstream> {
  try {
    return await withFailover(group, signal, async (upstream) => {
      await stream(upstream.dispatcher, options(upstream, request, signal), ({ statusCode, headers }) => {
        const declared = Number(headers["content-length"] ?? -1);
        if (declared > maxBytes) throw new GatewayError("UPSTREAM_RESPONSE_TOO_LARGE", { maxBytes });
        res.writeHead(statusCode, passedHeaders(headers));
        // A stream's next item may be minutes away: the client must see the status now.
        if (request.stream) res.flushHeaders();
        // A declared length is enforced by the HTTP parser; only an undeclared one needs counting.
        return declared >= 0 || maxBytes === Number.POSITIVE_INFINITY ? res : new ByteCap(res, maxBytes);
      });
      return upstream;
    });
  } catch (error) {
    if (!res.headersSent) throw error;
    // The status line is gone: all that is left is to cut the connection.
    res.destroy();
    throw signal.aborted ? new GatewayError("CLIENT_CLOSED") : error;
  }
}

/** Tries the group's upstreams in order; moves on only when the request cannot have reached the node. */
async function withFailover<T>(
  group: UpstreamGroup,
  signal: UpstreamSignal,
  attempt: (upstream: Upstream) => Promise<T>,
): Promise<T> {
  let failure: unknown;
  const order = group.order();
  for (let i = 0; i < order.length && i < MAX_ATTEMPTS; i++) {
    try {
      return await attempt(order[i] as Upstream);
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      failure = error;
      if (signal.aborted || !NOT_SENT.has(errorCode(error))) break;
    }
  }
  throw toGatewayError(failure);
}

function options(upstream: Upstream, request: ForwardRequest, signal: UpstreamSignal) {
  return {
    method: request.method,
    path: upstreamPath(upstream, request.path, request.query),
    headers: upstream.hasHeaders ? { ...request.headers, ...upstream.headers } : request.headers,
    body: request.body ?? null,
    signal,
    ...(request.stream ? { bodyTimeout: 0 } : {}),
  };
}

const PASSED_HEADERS = [
  "content-type",
  "content-length",
  "content-encoding",
  "cache-control",
  "etag",
  "last-modified",
  "retry-after",
];

function passedHeaders(from: IncomingHttpHeaders): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = { ...ANY_ORIGIN };
  for (const name of PASSED_HEADERS) {
    const value = from[name];
    if (value !== undefined) headers[name] = value;
  }
  return headers;
}

/** Writes through to the response, counting; past the cap it fails, which aborts the upstream request. */
class ByteCap extends Writable {
  readonly #res: ServerResponse;
  readonly #maxBytes: number;
  #seen = 0;

  constructor(res: ServerResponse, maxBytes: number) {
    super();
    this.#res = res;
    this.#maxBytes = maxBytes;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.#seen += chunk.length;
    if (this.#seen > this.#maxBytes) {
      done(new GatewayError("UPSTREAM_RESPONSE_TOO_LARGE", { maxBytes: this.#maxBytes }));
    } else if (this.#res.write(chunk)) done();
    else this.#res.once("drain", () => done());
  }

  override _final(done: (error?: Error | null) => void): void {
    this.#res.end(() => done());
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    if (error) this.#res.destroy();
    done(error);
  }
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
