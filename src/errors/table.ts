// Every error the gateway itself makes, with both wire codes side by side (proxyd's RPCErr, eRPC's status
// map). docs/errors.md lists the same rows; test/errors/docs.test.ts keeps the two in agreement. An
// upstream node's own errors are not here: they pass untouched.
//
// JSON-RPC numbers, in four blocks:
// - JSON-RPC 2.0's own where one fits: -32700, -32600, -32601, -32603;
// - EIP-1474's -32005 "limit exceeded" for every rate and capacity limit, and its -32000 "invalid input"
//   where a node would answer the call so itself (a filter it does not know: SDKs make a new one on it);
// - -32011..-32022 for upstream and size failures: the numbers proxyd gives the same failures, and
//   -32022 for the one it has no number for, a write the node did not confirm;
// - -32040..-32049, the gateway's own block, for keys and plans (all ten in use).
// Codes of the self-service API (its rows at the end) have no JSON-RPC number: that API speaks REST only.

export interface ErrorSpec {
  readonly status: number;
  /** Absent on the self-service API's codes, which are never written as a JSON-RPC error. */
  readonly rpc?: number;
  readonly message: string;
  /** The nodes' doing, not the gateway's: the metrics' `result="upstream"` (metrics/gateway-metrics.ts). */
  readonly upstream?: true;
}

export const ERRORS = {
  PARSE_ERROR: { status: 400, rpc: -32700, message: "The body is not valid JSON" },
  INVALID_REQUEST: {
    status: 400,
    rpc: -32600,
    message: "The request is not a valid JSON-RPC request for this network",
  },
  EMPTY_BATCH: { status: 400, rpc: -32600, message: "A batch must hold at least one request" },
  BATCH_NOT_SUPPORTED: { status: 400, rpc: -32600, message: "This network's node does not accept batches" },
  DUPLICATE_MEMBER: { status: 400, rpc: -32600, message: "A request member appears twice" },
  NESTING_TOO_DEEP: { status: 400, rpc: -32600, message: "The body nests deeper than the gateway allows" },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    rpc: -32600,
    message: "Send the body as Content-Type: application/json",
  },
  METHOD_NOT_FOUND: { status: 403, rpc: -32601, message: "The method is not available on this network" },
  METHOD_NOT_ON_PLAN: { status: 403, rpc: -32042, message: "The method is not on the API key's plan" },
  WEBSOCKET_ONLY: { status: 400, rpc: -32043, message: "The method is served over WebSocket only" },
  DEDICATED_ONLY_INTERFACE: {
    status: 403,
    rpc: -32044,
    message: "This interface is served on dedicated nodes only",
  },
  UNAUTHORIZED: { status: 401, rpc: -32040, message: "A valid API key is required" },
  NETWORK_FORBIDDEN: { status: 403, rpc: -32041, message: "The API key has no access to this network" },
  ARCHIVE_REQUIRED: {
    status: 403,
    rpc: -32045,
    message:
      "This read needs an archive node: call the network's archive label with a key that has archive access",
  },
  RATE_LIMITED: { status: 429, rpc: -32005, message: "Request rate limit exceeded" },
  REQUEST_OVER_BURST: {
    status: 413,
    rpc: -32005,
    message: "The request costs more than the API key's plan lets through at once",
  },
  QUOTA_EXCEEDED: {
    status: 402,
    rpc: -32046,
    message: "The compute-unit quota for this period has too little left for the request",
  },
  KEY_SETTING_REFUSED: { status: 403, rpc: -32047, message: "The API key's settings do not allow this call" },
  JWT_REQUIRED: { status: 401, rpc: -32048, message: "This API key requires a valid JWT with every call" },
  UNSUPPORTED_TRANSFER_ENCODING: {
    status: 400,
    rpc: -32600,
    message: "The request's Transfer-Encoding is not chunked alone",
  },
  BODY_TOO_LARGE: { status: 413, rpc: -32021, message: "The body is larger than the gateway allows" },
  BATCH_TOO_LARGE: {
    status: 413,
    rpc: -32014,
    message: "The batch holds more requests than the gateway allows",
  },
  BLOCK_RANGE_TOO_LARGE: {
    status: 413,
    rpc: -32005,
    message: "The block range is wider than the gateway allows",
  },
  PAGE_TOO_LARGE: {
    status: 413,
    rpc: -32005,
    message: "The page asked for is larger than the gateway allows",
  },
  HEADERS_TOO_LARGE: { status: 431, rpc: -32600, message: "Too many request headers" },
  BAD_HOST: { status: 400, rpc: -32600, message: "The Host header is missing, repeated or malformed" },
  BAD_PATH: { status: 400, rpc: -32600, message: "The request path is malformed" },
  UNKNOWN_NETWORK: { status: 404, rpc: -32601, message: "No network is served on this host" },
  NOT_FOUND: { status: 404, rpc: -32601, message: "No such route on this network" },
  // At 200, as a node answers a filter it does not know: at an HTTP error status ethers reads the server's
  // failure ("server response 404"), not the node's -32000 that SDKs make a new filter on.
  FILTER_NOT_FOUND: {
    status: 200,
    rpc: -32000,
    message: "No such filter for this API key: a filter is used with the key that made it",
  },
  HTTP_METHOD_NOT_ALLOWED: {
    status: 405,
    rpc: -32600,
    message: "The HTTP method is not allowed on this path",
  },
  WEBSOCKET_NOT_OFFERED: { status: 400, rpc: -32600, message: "This endpoint has no WebSocket interface" },
  WEBSOCKET_HANDSHAKE_INVALID: {
    status: 400,
    rpc: -32600,
    message: "The WebSocket handshake is malformed",
  },
  TOO_MANY_CONNECTIONS: {
    status: 429,
    rpc: -32005,
    message: "Too many WebSocket connections for this key or address",
  },
  TOO_MANY_SUBSCRIPTIONS: { status: 429, rpc: -32005, message: "Too many subscriptions on this connection" },
  TOO_MANY_IN_FLIGHT: { status: 429, rpc: -32005, message: "Too many unanswered calls on this connection" },
  TOO_MANY_HELD_CALLS: {
    status: 429,
    rpc: -32005,
    message: "Too many streams and long polls held at once for this API key or address",
  },
  NO_UPSTREAM: {
    status: 503,
    rpc: -32011,
    message: "No upstream node is available for this network",
    upstream: true,
  },
  UPSTREAM_TIMEOUT: {
    status: 504,
    rpc: -32015,
    message: "The upstream node did not answer in time",
    upstream: true,
  },
  UPSTREAM_BAD_RESPONSE: {
    status: 502,
    rpc: -32013,
    message: "The upstream node sent an invalid response",
    upstream: true,
  },
  UPSTREAM_RESPONSE_TOO_LARGE: {
    status: 502,
    rpc: -32020,
    message: "The upstream response is larger than the gateway allows",
    upstream: true,
  },
  WRITE_NOT_CONFIRMED: {
    status: 502,
    rpc: -32022,
    message: "The upstream node took the write but did not confirm it; it was not sent again",
    upstream: true,
  },
  CLIENT_CLOSED: { status: 499, rpc: -32603, message: "The client went away before the answer" },
  DRAIN_CUT: { status: 503, rpc: -32603, message: "The gateway stopped before the answer was sent" },
  KEY_WITHDRAWN: {
    status: 401,
    rpc: -32049,
    message: "The API key was withdrawn or its settings changed while the call was held",
  },
  INTERNAL: { status: 500, rpc: -32603, message: "Internal gateway error" },
  // The self-service API's own (control plane, REST only)
  INVALID_EMAIL: { status: 400, message: "The e-mail address is not valid" },
  INVALID_FIELD: { status: 400, message: "A field of the request is missing or invalid" },
  EMAIL_TAKEN: { status: 409, message: "An account with this e-mail address already exists" },
  TOKEN_INVALID: { status: 400, message: "The token is unknown or already used" },
  TOKEN_EXPIRED: { status: 400, message: "The token has expired" },
  SESSION_REQUIRED: {
    status: 401,
    message: "Sign in: send Authorization: Bearer <session token>",
  },
  ACCOUNT_NOT_ACTIVE: { status: 403, message: "The account is not active" },
  FREE_TEST_LIMIT: {
    status: 409,
    message: "The account has had its free tests",
  },
  KEY_LIMIT: { status: 409, message: "The account holds as many keys of this plan as the plan allows" },
  KEY_NOT_FOUND: { status: 404, message: "No such key" },
  KEY_ALREADY_ROTATED: { status: 409, message: "The key was rotated already: rotate its successor" },
  NETWORK_NOT_FOUND: { status: 404, message: "No such network" },
  API_ROUTE_NOT_FOUND: { status: 404, message: "No such route in the self-service API" },
  OPERATOR_ROUTE_NOT_FOUND: { status: 404, message: "No such route in the operator API" },
  OPERATOR_PAGE_REFUSED: { status: 403, message: "The operator API answers no web page's request" },
  UPSTREAM_NOT_FOUND: { status: 404, message: "No such upstream on this label" },
  OPERATOR_UNREACHABLE: { status: 503, message: "No operator API answered at that address" },
  CSRF_REFUSED: {
    status: 403,
    message: "The request lacks the dashboard's X-CSRF-Token: reload the page",
  },
  STORE_UNAVAILABLE: {
    status: 503,
    message: "The account store cannot be reached; try again shortly",
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/** The codes with a JSON-RPC number: all but the self-service API's. */
export type RpcErrorCode = {
  [C in ErrorCode]: (typeof ERRORS)[C] extends { readonly rpc: number } ? C : never;
}[ErrorCode];

export function hasRpcNumber(code: ErrorCode): code is RpcErrorCode {
  return (ERRORS[code] as ErrorSpec).rpc !== undefined;
}

/** A gateway-made failure: a stable string code plus what the caller can act on. */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly detail: Readonly<Record<string, unknown>> | undefined;
  readonly headers: Readonly<Record<string, string>> | undefined;
  /**
   * The key a refusal at admission was for (its network, its settings), so that the key's usage counts
   * it as the owner's error. Never part of an answer.
   */
  keyId: string | undefined = undefined;

  constructor(code: ErrorCode, detail?: Record<string, unknown>, headers?: Record<string, string>) {
    // A refusal is an answer, not a defect: its stack is never read (pipeline/boundary.ts logs only other
    // errors'), and capturing one cost more than the rest of a refused request (docs/performance.md).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(ERRORS[code].message);
    Error.stackTraceLimit = limit;
    this.name = "GatewayError";
    this.code = code;
    this.detail = detail;
    this.headers = headers;
  }

  get status(): number {
    return ERRORS[this.code].status;
  }
}
