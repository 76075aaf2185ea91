import { once } from "node:events";
import type { ServerResponse } from "node:http";
import type { Dispatcher } from "undici";
import { type ErrorCode, GatewayError } from "../errors/table.js";
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
  signal: AbortSignal,
): Promise<UpstreamResponse> {
  let failure: unknown;
  for (const upstream of group.order().slice(0, MAX_ATTEMPTS)) {
    try {
      const data = await upstream.dispatcher.request({
        method: request.method,
        path: upstreamPath(upstream, request.path, request.query),
        headers: { ...request.headers, ...upstream.headers },
        body: request.body ?? null,
        signal,
        ...(request.stream ? { bodyTimeout: 0 } : {}),
      });
      return { upstream, data };
    } catch (error) {
      failure = error;
      if (signal.aborted || !NOT_SENT.has(errorCode(error))) break;
    }
  }
  throw toGatewayError(failure);
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

/**
 * Streams the upstream's answer back unchanged (status, content type, body), counting bytes against the
 * cap. Past the cap nothing more is read, and the client's connection is cut since its status is gone.
 */
export async function relayResponse(
  res: ServerResponse,
  data: Dispatcher.ResponseData,
  maxBytes: number,
  stream = false,
): Promise<void> {
  const declared = Number(data.headers["content-length"] ?? -1);
  if (declared > maxBytes) {
    await data.body.dump({ limit: 0 }).catch(() => {});
    throw new GatewayError("UPSTREAM_RESPONSE_TOO_LARGE", { maxBytes });
  }
  const headers: Record<string, string | string[]> = {};
  for (const name of PASSED_HEADERS) {
    const value = data.headers[name];
    if (value !== undefined) headers[name] = value;
  }
  res.writeHead(data.statusCode, headers);
  // A stream's next item may be minutes away: the client must see the status now.
  if (stream) res.flushHeaders();
  let seen = 0;
  try {
    for await (const chunk of data.body) {
      seen += (chunk as Buffer).length;
      if (seen > maxBytes) throw new GatewayError("UPSTREAM_RESPONSE_TOO_LARGE", { maxBytes });
      if (!res.write(chunk) && !res.destroyed) await once(res, "drain");
      if (res.destroyed) break;
    }
    res.end();
  } catch (error) {
    data.body.destroy();
    res.destroy();
    if (!(error instanceof GatewayError)) throw toGatewayError(error);
    throw error;
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
