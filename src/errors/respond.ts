import { type ServerResponse, STATUS_CODES } from "node:http";
import { addRequestId, REQUEST_ID_HEADER, requestIdOf } from "../http/request-id.js";
import { ERRORS, type ErrorCode, type GatewayError, hasRpcNumber, type RpcErrorCode } from "./table.js";

// The one place where gateway errors become bytes.

/** A JSON-RPC error object; `rawId` is the request's id token exactly as the caller wrote it. */
export function rpcErrorJson(
  code: RpcErrorCode,
  rawId: string,
  detail?: Readonly<Record<string, unknown>>,
): string {
  const spec = ERRORS[code];
  const data = JSON.stringify({ code, ...detail });
  return `{"jsonrpc":"2.0","id":${rawId},"error":{"code":${spec.rpc},"message":${JSON.stringify(spec.message)},"data":${data}}}`;
}

/** A REST-style JSON error body. */
export function restErrorJson(code: ErrorCode, detail?: Readonly<Record<string, unknown>>): string {
  const spec = ERRORS[code];
  return JSON.stringify({ error: { code, status: spec.status, message: spec.message, ...detail } });
}

export type ErrorStyle = "jsonrpc" | "rest";

/** An error's body in the given style; a code without a JSON-RPC number is always a REST body. */
export function errorBody(
  error: GatewayError,
  style: ErrorStyle,
  rawId = "null",
  requestId: string | undefined = undefined,
): string {
  // the request's id, which a customer quotes and an operator finds in the log (docs/operations.md)
  const detail = requestId === undefined ? error.detail : { ...error.detail, requestId };
  return style === "jsonrpc" && hasRpcNumber(error.code)
    ? rpcErrorJson(error.code, rawId, detail)
    : restErrorJson(error.code, detail);
}

/** A refused WebSocket upgrade: a whole HTTP response for the raw socket, sent before any handshake. */
export function upgradeRefusal(error: GatewayError, requestId?: string): string {
  const body = errorBody(error, "jsonrpc", "null", requestId);
  const headers =
    requestId === undefined ? error.headers : { ...error.headers, [REQUEST_ID_HEADER]: requestId };
  const extra = Object.entries(headers ?? {})
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  const reason = STATUS_CODES[error.status] ?? "Error";
  return `HTTP/1.1 ${error.status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}connection: close\r\n\r\n${body}`;
}

/**
 * The whole HTTP response for a request Node's parser refused before any handler ran (a malformed
 * request line or header, headers past the size cap, a request that timed out): no body, and the
 * connection closed, as the parser has lost its place in the stream.
 */
export function parserRefusal(code: string | undefined): string {
  const status = code === "HPE_HEADER_OVERFLOW" ? 431 : code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : 400;
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`;
}

/** A CORS preflight: any origin may call with POST or GET and a JSON body (see ANY_ORIGIN). */
export function preflight(res: ServerResponse): void {
  res.writeHead(204, {
    ...ANY_ORIGIN,
    "access-control-allow-methods": "GET, POST",
    // authorization: a key whose owner requires a JWT takes it as a bearer token (docs/plans.md)
    "access-control-allow-headers": "content-type, accept, authorization",
    "access-control-max-age": "86400",
  });
  res.end();
}

export function sendError(res: ServerResponse, error: GatewayError, style: ErrorStyle, rawId = "null"): void {
  sendJson(res, error.status, errorBody(error, style, rawId, requestIdOf(res)), error.headers);
}

/**
 * Browser dapps call node endpoints straight from the page (a key in the URL, no cookies), so any origin
 * may read answers and errors. Passed to writeHead with the rest rather than set with setHeader
 * beforehand, which sends Node's writeHead down its slow merging path (docs/performance.md).
 */
export const ANY_ORIGIN = { "access-control-allow-origin": "*" } as const;

export function sendJson(
  res: ServerResponse,
  status: number,
  body: string,
  headers?: Readonly<Record<string, string>>,
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(
    status,
    addRequestId(res, {
      ...headers,
      ...ANY_ORIGIN,
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
    }),
  );
  res.end(body);
}
