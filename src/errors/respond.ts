import { type ServerResponse, STATUS_CODES } from "node:http";
import {
  addAnswerTag,
  COMPUTE_UNITS_HEADER,
  pushAnswerTag,
  REQUEST_ID_HEADER,
  requestIdOf,
} from "../http/request-id.js";
import { type BatchLayout, hasRefusals, inPlaces } from "../jsonrpc/merge.js";
import type { Endpoint, JsonRpcPolicy } from "../registry/types.js";
import { ERRORS, type ErrorCode, type GatewayError, hasRpcNumber, type RpcErrorCode } from "./table.js";

// The one place where gateway errors become bytes.

/**
 * A JSON-RPC error object; `rawId` is the request's id token exactly as the caller wrote it. Its `data`
 * holds the code, the detail's members and the request's id, written out rather than spread into an
 * object first: a refusal is the answer an over-limit caller gets at its full rate, and the spreads
 * showed in its profile (docs/performance.md).
 */
export function rpcErrorJson(
  code: RpcErrorCode,
  rawId: string,
  detail?: Readonly<Record<string, unknown>>,
  requestId: string | undefined = undefined,
  form: ErrorForm = "2.0",
): string {
  const spec = ERRORS[code];
  // a code is an identifier, and a request id only letters, digits and ._:- (http/request-id.ts)
  let data = `{"code":"${code}"`;
  if (detail !== undefined) {
    const members = JSON.stringify(detail);
    if (members.length > 2) data += `,${members.slice(1, -1)}`;
  }
  if (requestId !== undefined) data += `,"requestId":"${requestId}"`;
  const named = form === "causes" ? `${causeMembers(code, spec.message, detail)},` : "";
  // `data` is still open: its brace, then the error's
  const error = `{${named}"code":${spec.rpc},"message":${JSON.stringify(spec.message)},"data":${data}}}`;
  // JSON-RPC 1.0's answer has both members and no version (bitcoind's to a 1.0 call)
  if (form === "1.0") return `{"result":null,"error":${error},"id":${rawId}}`;
  return `{"jsonrpc":"2.0","id":${rawId},"error":${error}}`;
}

/** A JSON-RPC error's shape: 2.0's, 2.0's with nearcore's causes, or 1.0's (registry envelopes). */
export type ErrorForm = "2.0" | "causes" | "1.0";

/** The form of an error to one call of a dialect: 1.0's for a 1.0 call where the dialect answers so. */
export function errorFormOf(
  policy: Pick<JsonRpcPolicy, "errorCauses" | "legacyReplies">,
  legacy: boolean,
): ErrorForm {
  if (legacy && policy.legacyReplies) return "1.0";
  return policy.errorCauses ? "causes" : "2.0";
}

/**
 * nearcore's `name` and `cause` for a gateway error, as near-api-js reads them (its providers/errors/
 * parse.js): an unknown method is nearcore's own REQUEST_VALIDATION_ERROR / METHOD_NOT_FOUND, a body it
 * cannot read its PARSE_ERROR; anything else an INTERNAL_ERROR whose message, which the SDK shows, says
 * what the gateway refused and its code.
 */
function causeMembers(
  code: RpcErrorCode,
  message: string,
  detail?: Readonly<Record<string, unknown>>,
): string {
  if (code === "METHOD_NOT_FOUND")
    return `"name":"REQUEST_VALIDATION_ERROR","cause":{"name":"METHOD_NOT_FOUND","info":{"method_name":${JSON.stringify(String(detail?.method ?? ""))}}}`;
  const said = JSON.stringify(`${message} (${code})`);
  if (code === "PARSE_ERROR" || code === "INVALID_REQUEST")
    return `"name":"REQUEST_VALIDATION_ERROR","cause":{"name":"PARSE_ERROR","info":{"error_message":${said}}}`;
  return `"name":"INTERNAL_ERROR","cause":{"name":"INTERNAL_ERROR","info":{"error_message":${said}}}`;
}

/**
 * A REST-style JSON error body: its `code`, `status` (the HTTP status) and `message` first, the detail's
 * members after them; a detail never takes their place (docs/errors.md's shape).
 */
function restErrorJson(
  code: ErrorCode,
  detail?: Readonly<Record<string, unknown>>,
  requestId: string | undefined = undefined,
  topMessage = false,
): string {
  const spec = ERRORS[code];
  const own = { code, status: spec.status, message: spec.message };
  // first in the body, and written again after the detail so that none of its members replaces them
  const error = Object.assign({ ...own, ...detail, requestId }, own);
  // where the interface's nodes put their errors' text, which its SDKs show (registry `errorMessage`)
  return JSON.stringify(topMessage ? { message: `${spec.message} (${code})`, error } : { error });
}

/** How errors are written: REST bodies, JSON-RPC error objects, or those with nearcore's causes too. */
export type ErrorStyle = "jsonrpc" | "jsonrpc-causes" | "jsonrpc-1.0" | "rest" | "rest-message";

/** Whether a style writes REST bodies (with a top-level `message` or without). */
export function isRest(style: ErrorStyle): style is "rest" | "rest-message" {
  return style === "rest" || style === "rest-message";
}

/** A REST interface's style: with a top-level `message` where its nodes' errors carry one (registry `errorMessage`). */
export function restStyle(policy: { readonly errorMessage?: true } | undefined): ErrorStyle {
  return policy?.errorMessage === true ? "rest-message" : "rest";
}

const FORMS: Record<Exclude<ErrorStyle, "rest" | "rest-message">, ErrorForm> = {
  jsonrpc: "2.0",
  "jsonrpc-causes": "causes",
  "jsonrpc-1.0": "1.0",
};

/** The error style of an endpoint before its mount is known (a refused key): its JSON-RPC mount's, if any. */
export function endpointStyle(endpoint: Endpoint, url = "/"): ErrorStyle {
  if (endpoint.family === "rest") return restStyle(endpoint.mounts[0]?.policy);
  // one mount, the most endpoints: its style, with no reading of the path on every request
  if (endpoint.mounts.length === 1) return jsonRpcStyle(endpoint.mounts[0]?.policy.jsonrpc);
  // a mixed endpoint (a REST API at its root, JSON-RPC at a path below it): the mount the path goes to,
  // found as stage 3 will find it, the key's segment or none before it
  const path = url.split("?")[0] ?? "/";
  const mount =
    endpoint.mounts.find((m) => m.path !== "/" && (path.endsWith(m.path) || path.includes(`${m.path}/`))) ??
    endpoint.mounts.find((m) => m.path === "/");
  if (mount !== undefined && mount.policy.jsonrpc === undefined) return restStyle(mount.policy);
  return jsonRpcStyle((mount ?? endpoint.mounts.find((m) => m.policy.jsonrpc !== undefined))?.policy.jsonrpc);
}

/** The JSON-RPC error style of a dialect: with causes where its errors carry them (registry `errorCauses`). */
export function jsonRpcStyle(policy: Pick<JsonRpcPolicy, "errorCauses"> | undefined): ErrorStyle {
  return policy?.errorCauses === true ? "jsonrpc-causes" : "jsonrpc";
}

/**
 * A batch's answer when an error (a rate, a quota, no node) stops the calls that passed their checks: each
 * of them gets the error by its id, and the calls refused on their own keep their refusals, so that a
 * client pairing answers with calls by id (ethers, viem) finds every one. With no call to answer (every
 * call a notification), the error alone, with id null: JSON-RPC never answers with an empty array.
 * `legacy`: which of `ids`' calls are framed as JSON-RPC 1.0 on a dialect that answers them in 1.0's shape.
 */
export function batchErrorBody(
  error: GatewayError,
  ids: readonly string[],
  refusals: BatchLayout,
  requestId: string | undefined,
  style: ErrorStyle = "jsonrpc",
  legacy?: readonly boolean[],
): string {
  if (ids.length === 0 && !hasRefusals(refusals)) return errorBody(error, style, "null", requestId);
  // each call in its own framing's shape, where the dialect answers 1.0 calls so (bitcoind)
  const each = ids.map((id, i) =>
    errorBody(error, legacy?.[i] === true ? "jsonrpc-1.0" : style, id, requestId),
  );
  return `[${inPlaces(refusals, each, (refusal) => refusal).join(",")}]`;
}

/** An error's body in the given style; a code without a JSON-RPC number is always a REST body. */
export function errorBody(
  error: GatewayError,
  style: ErrorStyle,
  rawId = "null",
  requestId: string | undefined = undefined,
): string {
  // the request's id, which a customer quotes and an operator finds in the log (docs/operations.md)
  return !isRest(style) && hasRpcNumber(error.code)
    ? rpcErrorJson(error.code, rawId, error.detail, requestId, FORMS[style])
    : restErrorJson(error.code, error.detail, requestId, style === "rest-message");
}

/** A refused WebSocket upgrade: a whole HTTP response for the raw socket, sent before any handshake. */
export function upgradeRefusal(
  error: GatewayError,
  requestId?: string,
  style: ErrorStyle = "jsonrpc",
): string {
  const body = errorBody(error, style, "null", requestId);
  // a refusal costs nothing, and says so as every other answer of the data plane does
  const headers: Record<string, string> = { ...error.headers, [COMPUTE_UNITS_HEADER]: "0" };
  if (requestId !== undefined) headers[REQUEST_ID_HEADER] = requestId;
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  const reason = STATUS_CODES[error.status] ?? "Error";
  return `HTTP/1.1 ${error.status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}connection: close\r\n\r\n${body}`;
}

/**
 * The whole HTTP response for a request Node's parser refused (a malformed request line or header, headers
 * past the size cap, a request that timed out): no body, and the connection closed, as the parser has lost
 * its place in the stream. `requestId`: a request timed out mid-body, whose handler had begun.
 */
export function parserRefusal(code: string | undefined, requestId?: string): string {
  const status = code === "HPE_HEADER_OVERFLOW" ? 431 : code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : 400;
  const id = requestId === undefined ? "" : `${REQUEST_ID_HEADER}: ${requestId}\r\n`;
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nconnection: close\r\ncontent-length: 0\r\n${COMPUTE_UNITS_HEADER}: 0\r\n${id}\r\n`;
}

/** What a preflight allows when the browser asks for no header, or for a list that is not header names. */
const PREFLIGHT_HEADERS = "content-type, accept, authorization";
/** A list of header names (RFC 9110 tokens), as `Access-Control-Request-Headers` carries them. */
const HEADER_NAMES = /^[!#$%&'*+.^_`|~0-9a-z-]+(?:[ \t]*,[ \t]*[!#$%&'*+.^_`|~0-9a-z-]+)*$/i;

/**
 * A CORS preflight: any origin may call with POST or GET and a JSON body (see ANY_ORIGIN), with whatever
 * request headers its SDK sends: some send X-Client-Name and X-Client-Version with every call, a
 * tracer `traceparent`, a key whose owner requires a JWT `authorization` (docs/plans.md). The gateway
 * forwards none of them to a node but those the registry names, so allowing them opens nothing. The
 * self-service API names the methods of the route asked for.
 */
export function preflight(res: ServerResponse, requested: string | undefined, methods = "GET, POST"): void {
  const asked = requested?.trim() ?? "";
  const allowed =
    asked.length > 0 && asked.length <= 1024 && HEADER_NAMES.test(asked) ? asked : PREFLIGHT_HEADERS;
  // with the request id every answer carries, which the access line names too
  res.writeHead(
    204,
    addAnswerTag(res, 204, {
      ...ANY_ORIGIN,
      "access-control-allow-methods": methods,
      "access-control-allow-headers": allowed,
      "access-control-max-age": "86400",
      vary: "access-control-request-headers",
    }),
  );
  res.end();
}

export function sendError(
  res: ServerResponse,
  error: GatewayError,
  style: ErrorStyle,
  rawId = "null",
  readers: Readers = "any-origin",
): void {
  sendJson(res, error.status, errorBody(error, style, rawId, requestIdOf(res)), error.headers, readers);
}

/**
 * Which pages a browser lets read an answer: any origin's for the gateway's and the self-service API's,
 * whose callers prove themselves with a key or a token; none but the listener's own for the operator
 * API, which trusts whoever reaches its private address and must not be read or driven by a page that
 * an operator's browser happens to have open.
 */
export type Readers = "any-origin" | "same-origin";

/**
 * Browser dapps call node endpoints straight from the page (a key in the URL, no cookies), so any origin
 * may read answers and errors. Passed to writeHead with the rest rather than set with setHeader
 * beforehand, which sends Node's writeHead down its slow merging path (docs/performance.md).
 */
export const ANY_ORIGIN = { "access-control-allow-origin": "*" } as const;

/**
 * The gateway's own answer headers a page's script may read, on every answer a page may read: the request
 * id (http/request-id.ts), which a customer quotes to support, what the answer cost (X-Compute-Units), how
 * the cache and which tier answered (cache/relay-cached.ts, answers/archive.ts), and when a refused call
 * may be sent again (a rate's and a quota's `Retry-After`, the rate's `RateLimit-*`). Without it a browser
 * hides them from the page.
 */
export const EXPOSED_HEADERS =
  "x-cache, x-upstream-tier, x-request-id, x-compute-units, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset";

export function sendJson(
  res: ServerResponse,
  status: number,
  body: string,
  headers?: Readonly<Record<string, string>>,
  readers: Readers = "any-origin",
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // Node's flat list of names and values: objects spread together for every answer showed in a
  // refusal's profile (docs/performance.md)
  const raw: string[] = [];
  if (headers !== undefined) for (const name in headers) raw.push(name, headers[name] as string);
  if (readers === "any-origin")
    raw.push(
      "access-control-allow-origin",
      ANY_ORIGIN["access-control-allow-origin"],
      "access-control-expose-headers",
      EXPOSED_HEADERS,
    );
  // a 204 has no body, and so neither a type nor a length (RFC 9110 §8.6)
  if (status !== 204)
    raw.push("content-type", "application/json", "content-length", String(Buffer.byteLength(body)));
  res.writeHead(status, pushAnswerTag(res, status, raw));
  res.end(body);
}
