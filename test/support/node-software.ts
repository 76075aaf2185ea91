import type { Reply, SeenRequest } from "./loopback-node.js";
import { ALGOD_API_TOKEN, type Guard, RPC_PASSWORD } from "./node-guards.js";

// How each interface's node software answers over HTTP, quirks included, so that a loopback node proves
// something about real nodes rather than about the gateway's own assumptions. Sources, read in each
// software's code (commit and file):
// - Bitcoin Core src/httprpc.cpp (JSONErrorReply) and src/rpc/request.cpp (JSONRPCReplyObj), at
//   dae0d13b; Dogecoin Core 1.14 is Bitcoin 0.14's code: answers carry "error": null, errors are HTTP 500
//   (404 for an unknown method). Bitcoin Core v28 (bitcoin/bitcoin#27101, doc/release-notes-27101.md):
//   a call marked "jsonrpc": "2.0" is answered in 2.0's shape, its errors at HTTP 200 (bitcoind28 below).
// - nearcore chain/jsonrpc-primitives errors.rs: error objects carry name and cause; the HTTP status is
//   200 for handler errors, 400 for validation errors (an unknown method), 500 for internal ones.
// - toncenter/ton-http-api@4b4e54fc pyTON/main.py: {"ok": true, "result"} beside jsonrpc and the id as a
//   string; an unknown method is 422; a tonlib failure escapes as {"ok": false, "error", "code"}.
// - CardanoSolutions/ogmios@435189ae Codec/Json/Rpc.hs and App/Server/Http.hs: every answer carries
//   "method" and "id" (null when the request had none); over HTTP an answer with an error is a 400; an
//   unknown method is -32600.
// - stellar/stellar-rpc@41b2f0ff (creachadair/jrpc2 v1.3.3), eqlabs/pathfinder@afd4b22e,
//   nervosnetwork/ckb@5ebbc392, go-ethereum, jsonrpsee: JSON-RPC 2.0 with errors at HTTP 200.
// - Octez resto server.ml: minified JSON and a newline; an RPC error is a 500 with a JSON array of
//   {kind, id}; an unknown path or block is a 404 with no body.
// - vechain/thor@65b8e042 api/restutil: JSON and a newline; errors are plain text; an unknown block is
//   200 null.
// - NemProject/nem@a67b9943 ExceptionControllerAdvice: {timeStamp, error, message, status}.
// - algorand/go-algorand@dd6de88f daemon/algod/api/server/v2/utils.go: {"message"} with the status.
// - tronprotocol/java-tron@1e35f79a Util.processError: errors are HTTP 200 with {"Error": "class … : …"}.
// Each line names the source file and commit the shape is read from. The credentials they demand are in
// node-guards.ts.

/** What a loopback node is doing. */
export type NodeMode =
  /** answering as a healthy node of its chain */
  | "serving"
  /** failing every call the way its software fails (warming up, its backend away) */
  | "failing"
  /** answering, in its software's success shape, with no head: a node at its genesis, an empty block */
  | "no-head";

/** The chain a loopback node serves, as a test sets it. */
export interface NodeState {
  height: number;
  /** What it answers to an EVM eth_chainId. */
  chainId: number | undefined;
  /** What it answers to its interface's text chain call (a genesis hash, a chain name, a passphrase). */
  chain: string | undefined;
  mode: NodeMode;
}

/**
 * One JSON-RPC call's outcome on a node: its result, or an error of the node's own (`missing-state`: a
 * full node no longer has the state of the block the call names).
 */
export type Outcome =
  | { readonly result: unknown }
  | { readonly error: "unknown-method" | "failure" | "missing-state"; readonly method: string }
  /** The call's own error, as the software's handler throws it (NodeRejection): bad params, no such block. */
  | {
      readonly error: "rejected";
      readonly method: string;
      readonly code: number;
      readonly message: string;
      readonly body?: Record<string, unknown>;
    };

/** Thrown by an answer (typical-calls.ts, chain-answers.ts) for the error its software's handler gives the call. */
export class NodeRejection extends Error {
  readonly code: number;
  /** The whole error object as the software writes it, where it has more than code and message (nearcore's). */
  readonly body: Record<string, unknown> | undefined;
  constructor(code: number, message: string, body?: Record<string, unknown>) {
    super(message);
    this.code = code;
    this.body = body;
  }
}

/** How a JSON-RPC server software writes its answers. */
export interface JsonRpcSoftware {
  readonly name: string;
  /**
   * One call's answer, and the HTTP status its software gives a request holding only that call; nothing
   * for a call it takes as a notification (no id), where it answers none.
   */
  answer(call: IncomingCall, outcome: Outcome): Answer | undefined;
  /** Appended to every body. */
  readonly newline: boolean;
  readonly contentType: string;
  /** Where a default install serves JSON-RPC, which the operator writes in the upstream URL; `/` if absent. */
  readonly path?: string;
  /** What it answers a batch, for a software that takes one call a request; batches are answered call by call if absent. */
  readonly unbatched?: Answer;
  /** The credential it demands (node-guards.ts). */
  readonly guard?: Guard;
  /** Its answer to a call for state it no longer keeps; a software without one answers its failure. */
  readonly missingState?: (call: IncomingCall) => Answer;
  /**
   * It echoes the id's own source text rather than the value it parsed, so a number beyond a double's
   * precision (123456789012345678901234567890) keeps its digits: go-ethereum keeps the id as a
   * json.RawMessage (rpc/json.go jsonrpcMessage.ID); Bitcoin Core's UniValue keeps a number as its text
   * (univalue read.cpp, JSONRPCReplyObj echoes the request's id); nearcore's serde_json Value id, with
   * arbitrary_precision, keeps it as text too.
   */
  readonly echoesRawId?: boolean;
  /**
   * What it answers a non-empty batch whose calls are all notifications: `[]` at HTTP 200 if absent;
   * "no-content", HTTP 204 with no body (Bitcoin Core v28's HTTPReq_JSONRPC).
   */
  readonly notificationsOnlyBatch?: "no-content";
  /** What it answers a body that is not JSON; an empty HTTP 400 if absent. */
  readonly parseError?: Answer;
}

export interface Answer {
  readonly json: Record<string, unknown>;
  readonly status: number;
  /** The id's source text, written in place of json.id (a software that echoesRawId). */
  readonly rawId?: string;
}

export interface IncomingCall {
  /** The id as the caller sent it (as JSON.parse reads it); absent when the request had none. */
  readonly id?: unknown;
  /** The id's source text exactly as it stood in the request; absent when the request had none. */
  readonly rawId?: string;
  /** The request's jsonrpc member, if any. */
  readonly jsonrpc?: unknown;
  readonly method: string;
  readonly params?: unknown;
}

const JSON_TYPE = "application/json";

/** JSON-RPC 2.0 with errors at HTTP 200: go-ethereum, jsonrpsee (Substrate), jrpc2 (Stellar), pathfinder, CKB. */
function twoPointZero(
  name: string,
  unknownMethod: (method: string) => Record<string, unknown>,
  failure: Record<string, unknown>,
  newline = false,
): JsonRpcSoftware {
  return {
    name,
    newline,
    contentType: JSON_TYPE,
    // A call without an id is a notification, which these servers do not answer.
    answer: (call, outcome) =>
      call.id === undefined
        ? undefined
        : {
            status: 200,
            json: {
              jsonrpc: "2.0",
              id: call.id,
              ...("result" in outcome
                ? { result: outcome.result }
                : {
                    error:
                      outcome.error === "unknown-method"
                        ? unknownMethod(outcome.method)
                        : outcome.error === "rejected"
                          ? // the whole error object where it has more (jsonrpsee's ErrorObject with its data)
                            (outcome.body ?? { code: outcome.code, message: outcome.message })
                          : failure,
                  }),
            },
          },
  };
}

/** A bitcoind error object: {code, message}. */
interface BitcoindError {
  readonly code: number;
  readonly message: string;
}

/** bitcoind's answer to a body it cannot read as JSON (httprpc.cpp HTTPReq_JSONRPC). */
const PARSE_ERROR: BitcoindError = { code: -32700, message: "Parse error" };

/** The error object bitcoind's handler gives an outcome that is not a result. */
function bitcoindError(outcome: Exclude<Outcome, { result: unknown }>): BitcoindError {
  return outcome.error === "unknown-method"
    ? { code: -32601, message: "Method not found" }
    : outcome.error === "rejected"
      ? { code: outcome.code, message: outcome.message }
      : { code: -28, message: "Loading block index…" };
}

/** httprpc.cpp JSONErrorReply: 400 for RPC_INVALID_REQUEST, 404 for RPC_METHOD_NOT_FOUND, else 500. */
const legacyErrorStatus = (error: BitcoindError): number =>
  error.code === -32601 ? 404 : error.code === -32600 ? 400 : 500;

/**
 * Bitcoin Core up to v27 and Dogecoin Core 1.14: every answer JSON-RPC 1.0 style, whatever the request's
 * jsonrpc member says, with "error": null beside a result; an error at HTTP 500 (404 for an unknown
 * method) with its JSON body; a call without an id answered with "id": null. A batch is HTTP 200, each
 * call's answer 1.0 style inside it (JSONRPCExecBatch).
 */
function bitcoindLegacy(name: string): JsonRpcSoftware {
  return {
    name,
    newline: true,
    echoesRawId: true,
    contentType: JSON_TYPE,
    guard: RPC_PASSWORD,
    // HTTPReq_JSONRPC's RPC_PARSE_ERROR, through JSONErrorReply: 500, with the id it never read as null
    parseError: { status: 500, json: { result: null, error: PARSE_ERROR, id: null } },
    answer: (call, outcome) => {
      const error = "result" in outcome ? undefined : bitcoindError(outcome);
      return {
        status: error === undefined ? 200 : legacyErrorStatus(error),
        json: {
          result: error === undefined ? (outcome as { result: unknown }).result : null,
          error: error ?? null,
          // a call without an id is answered too, with a null one
          id: call.id ?? null,
        },
      };
    },
  };
}

/**
 * Bitcoin Core v28 and later (bitcoin/bitcoin#27101 "Support JSON-RPC 2.0 when requested by client", its
 * doc/release-notes-27101.md folded into the 28.0 release notes), read in src/rpc/request.cpp (JSONRPCRequest::parse, JSONRPCReplyObj) and src/httprpc.cpp
 * (HTTPReq_JSONRPC, JSONErrorReply) as of v28.0:
 * - parse: no "jsonrpc" member (or null), or "1.0", is JSONRPCVersion::V1_LEGACY; "2.0" is V2; a
 *   non-string is RPC_INVALID_REQUEST "jsonrpc field must be a string", any other string
 *   RPC_INVALID_REQUEST "JSON-RPC version not supported" (thrown while the version is still V1_LEGACY,
 *   so answered in 1.0's shape at HTTP 400). The id is kept only where the request has one
 *   (std::optional): JSONRPCReplyObj writes "id" only then, in either version.
 * - JSONRPCReplyObj: V2 writes "jsonrpc": "2.0" first, then result or error alone; V1_LEGACY writes
 *   both, one of them null, and no "jsonrpc".
 * - HTTPReq_JSONRPC, one request: V2 catches the handler's error (catch_errors) and answers it at HTTP
 *   200; V1_LEGACY lets it reach JSONErrorReply (400 for RPC_INVALID_REQUEST, 404 for
 *   RPC_METHOD_NOT_FOUND, else 500). A V2 request without an id is a notification (IsNotification): it
 *   runs, and the answer is HTTP 204 with no body.
 * - a batch: HTTP 200, each call answered in its own version's shape, its error caught; a notification's
 *   answer left out; a non-empty batch of notifications only is HTTP 204 with no body, an empty one `[]`.
 */
function bitcoind28(name: string): JsonRpcSoftware {
  return {
    name,
    newline: true,
    echoesRawId: true,
    contentType: JSON_TYPE,
    guard: RPC_PASSWORD,
    notificationsOnlyBatch: "no-content",
    // HTTPReq_JSONRPC's RPC_PARSE_ERROR, through JSONErrorReply with the request still V1_LEGACY and no id
    parseError: { status: 500, json: { result: null, error: PARSE_ERROR } },
    answer: (call, outcome) => {
      const id = Object.hasOwn(call, "id") ? { id: call.id } : {};
      const version = call.jsonrpc;
      if (version !== undefined && version !== null && typeof version !== "string")
        return {
          status: 400,
          json: { result: null, error: { code: -32600, message: "jsonrpc field must be a string" }, ...id },
        };
      if (typeof version === "string" && version !== "1.0" && version !== "2.0")
        return {
          status: 400,
          json: { result: null, error: { code: -32600, message: "JSON-RPC version not supported" }, ...id },
        };
      const error = "result" in outcome ? undefined : bitcoindError(outcome);
      const result = (outcome as { result?: unknown }).result;
      if (version === "2.0") {
        // a notification: run, and not answered
        if (!Object.hasOwn(call, "id")) return undefined;
        return {
          status: 200,
          json: { jsonrpc: "2.0", ...(error === undefined ? { result } : { error }), ...id },
        };
      }
      return {
        status: error === undefined ? 200 : legacyErrorStatus(error),
        json: { result: error === undefined ? result : null, error: error ?? null, ...id },
      };
    },
  };
}

const NEAR_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
/** The 32 bytes of a block hash here: a marker byte, the height, then a filler. */
const NEAR_HASH_FILL = "5a".repeat(23);

/** Block `height`'s hash, base58 as nearcore writes a CryptoHash: one of its own per height. */
export function nearBlockHash(height: number): string {
  let n = BigInt(`0x4c${height.toString(16).padStart(16, "0")}${NEAR_HASH_FILL}`);
  let text = "";
  while (n > 0n) {
    text = `${NEAR_BASE58[Number(n % 58n)]}${text}`;
    n /= 58n;
  }
  return text;
}

/** The height whose hash (nearBlockHash) `hash` is, or undefined for no block of this node's. */
export function nearHeightOf(hash: string): number | undefined {
  let n = 0n;
  for (const c of hash) {
    const digit = NEAR_BASE58.indexOf(c);
    if (digit < 0) return undefined;
    n = n * 58n + BigInt(digit);
  }
  const hex = n.toString(16);
  if (hex.length !== 64 || !hex.startsWith("4c") || !hex.endsWith(NEAR_HASH_FILL)) return undefined;
  return Number.parseInt(hex.slice(2, 18), 16);
}

/**
 * nearcore's UNKNOWN_BLOCK handler error of `block` (chain/jsonrpc-primitives types/blocks.rs RpcBlockError)
 * and `chunk` (types/chunks.rs RpcChunkError), at HTTP 200. Both variants are `UnknownBlock { error_message }`
 * with `#[serde(skip_serializing)]` on the message, so the cause's info is `{}`; the legacy `data` is
 * `format!("DB Not Found Error: {} \n Cause: Unknown", error_message)`, the message being the chain store's
 * DBNotFoundErr text: "BLOCK HEIGHT: <n>" where no block is indexed at the height (one above the head),
 * "BLOCK: <hash>" where the block itself is not in the store (a hash never seen, or one the node
 * garbage-collected: a non-archival node's GC drops DBCol::Block but not the header nor the height's index,
 * chain/chain/src/garbage_collection.rs, so a garbage-collected block is UNKNOWN_BLOCK too, never the
 * GARBAGE_COLLECTED_BLOCK that only RpcQueryError has).
 */
export function nearUnknownBlock(notFound: string): Record<string, unknown> {
  return {
    name: "HANDLER_ERROR",
    cause: { info: {}, name: "UNKNOWN_BLOCK" },
    code: -32000,
    message: "Server error",
    data: `DB Not Found Error: ${notFound} \n Cause: Unknown`,
  };
}

/** The block a `block` or `chunk` call names: block_id (a height or a hash), positional or by name. */
function nearBlockIdOf(call: IncomingCall): unknown {
  const params = call.params;
  if (Array.isArray(params)) return Array.isArray(params[0]) ? params[0][0] : params[0];
  return (params as { block_id?: unknown } | undefined)?.block_id;
}

/**
 * query's request types as methods of their own: each has an error type of its own (chain/jsonrpc-primitives
 * types/view_account.rs RpcViewAccountError, view_state.rs, view_access_key.rs, call_function.rs, and
 * view_code.rs, view_access_key_list.rs alike) with no GarbageCollectedBlock variant: its
 * From<RpcQueryError> turns GarbageCollectedBlock into InternalError { error_message: "The data for block
 * #<height> is garbage collected on this node, use an archival node to fetch historical data" }, which
 * RpcError::new_internal_or_handler_error (errors.rs) writes as name INTERNAL_ERROR, the cause INTERNAL_ERROR
 * with that error_message, and data the variant's Display ("The node reached its limits. Try again later.
 * More details: …"), at HTTP 500 as every internal error.
 */
const NEAR_VIEW_METHODS: ReadonlySet<string> = new Set([
  "EXPERIMENTAL_view_account",
  "EXPERIMENTAL_view_code",
  "EXPERIMENTAL_view_state",
  "EXPERIMENTAL_view_access_key",
  "EXPERIMENTAL_view_access_key_list",
  "EXPERIMENTAL_call_function",
]);

const nearcore: JsonRpcSoftware = {
  name: "nearcore",
  newline: false,
  echoesRawId: true,
  contentType: JSON_TYPE,
  // A non-archival node's answer for state it garbage-collected, by the call's error type: `block` and
  // `chunk` (RpcBlockError, RpcChunkError) have no such variant, the block is UNKNOWN_BLOCK (nearUnknownBlock);
  // `query` (RpcQueryError::GarbageCollectedBlock, chain/jsonrpc-primitives types/query.rs) is a handler
  // error at HTTP 200, its reason in cause.name; its request types as methods of their own
  // (NEAR_VIEW_METHODS) an INTERNAL_ERROR at HTTP 500 that says so only in its text.
  missingState: (call) => {
    const blockId = nearBlockIdOf(call);
    if (call.method === "block" || call.method === "chunk") {
      const hash = typeof blockId === "number" ? nearBlockHash(blockId) : String(blockId);
      return {
        status: 200,
        json: { jsonrpc: "2.0", error: nearUnknownBlock(`BLOCK: ${hash}`), id: call.id },
      };
    }
    const height = (call.params as { block_id?: unknown } | undefined)?.block_id;
    if (NEAR_VIEW_METHODS.has(call.method)) {
      // the height of the block the call names, as RpcQueryError::GarbageCollectedBlock carries it
      const blockHeight = typeof height === "string" ? (nearHeightOf(height) ?? height) : height;
      const why = `The data for block #${String(blockHeight)} is garbage collected on this node, use an archival node to fetch historical data`;
      return {
        status: 500,
        json: {
          jsonrpc: "2.0",
          error: {
            name: "INTERNAL_ERROR",
            cause: { name: "INTERNAL_ERROR", info: { error_message: why } },
            code: -32000,
            message: "Server error",
            data: `The node reached its limits. Try again later. More details: ${why}`,
          },
          id: call.id,
        },
      };
    }
    return {
      status: 200,
      json: {
        jsonrpc: "2.0",
        error: {
          name: "HANDLER_ERROR",
          cause: {
            name: "GARBAGE_COLLECTED_BLOCK",
            info: { block_height: height, block_hash: "9rq1nBvJ4Kc2Lx7Mz8Np3Qo5Rs6Tu7Vw8Xy9Za1Bc2De" },
          },
          code: -32000,
          message: "Server error",
          data: `The data for block #${String(height)} is garbage collected on this node, use an archival node to fetch historical data`,
        },
        id: call.id,
      },
    };
  },
  answer: (call, outcome) => {
    // A request without an id is a notification, which nearcore does not process.
    if (call.id === undefined) return undefined;
    if ("result" in outcome)
      return { status: 200, json: { jsonrpc: "2.0", result: outcome.result, id: call.id } };
    // a handler error (UNKNOWN_BLOCK, ...) is HTTP 200, as missingState's
    if (outcome.error === "rejected")
      return {
        status: 200,
        json: {
          jsonrpc: "2.0",
          error: outcome.body ?? { code: outcome.code, message: outcome.message },
          id: call.id,
        },
      };
    const error =
      outcome.error === "unknown-method"
        ? {
            name: "REQUEST_VALIDATION_ERROR",
            cause: { name: "METHOD_NOT_FOUND", info: { method_name: outcome.method } },
            code: -32601,
            message: "Method not found",
            data: outcome.method,
          }
        : {
            name: "INTERNAL_ERROR",
            cause: { info: { error_message: "Node is syncing" }, name: "INTERNAL_ERROR" },
            code: -32000,
            message: "Server error",
            data: "Node is syncing",
          };
    return {
      status: outcome.error === "unknown-method" ? 400 : 500,
      json: { jsonrpc: "2.0", error, id: call.id },
    };
  },
};

/** The block hash a Substrate state call names: its last param. */
function blockHashOf(call: IncomingCall): string {
  const params = Array.isArray(call.params) ? call.params : [];
  return String(params.at(-1));
}

const isObject = (value: unknown): boolean =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * A request ton-http-api's model refuses (TonRequestJsonRPC: params a dict, the id a string or what pydantic
 * 1 turns into one), and a batch: FastAPI's RequestValidationError, answered by its global handler with no
 * jsonrpc and no id (toncenter/ton-http-api@4b4e54fc ton-http-api/pyTON/models.py, main.py).
 */
const TON_VALIDATION_ERROR: Answer = {
  status: 422,
  json: { ok: false, error: "Validation error: value is not a valid dict", code: 422 },
};

const toncenter: JsonRpcSoftware = {
  name: "toncenter ton-http-api",
  newline: false,
  contentType: JSON_TYPE,
  // @app.post('/jsonRPC') below TON_API_ROOT_PATH, "/" by default (pyTON/main.py, settings.py)
  path: "/jsonRPC",
  unbatched: TON_VALIDATION_ERROR,
  // a liteserver without the archive asked for a block it no longer keeps (ton-blockchain/ton#832,
  // toncenter/ton-http-api#136): a tonlib error, so the app's handler's shape
  missingState: (call) => ({
    status: 500,
    json: {
      ok: false,
      error: `LITE_SERVER_NOTREADY: cannot find block (-1,8000000000000000) seqno=${(call.params as { seqno?: unknown } | undefined)?.seqno}: seqno not in db`,
      code: 500,
    },
  }),
  answer: (call, outcome) => {
    const idValid = call.id == null || typeof call.id === "string" || typeof call.id === "number";
    if (!idValid || !(call.params === undefined || isObject(call.params))) return TON_VALIDATION_ERROR;
    // an absent or null id is None, which the model leaves out (response_model_exclude_none)
    const id = call.id == null ? {} : { id: String(call.id) };
    if ("result" in outcome)
      return { status: 200, json: { ok: true, result: outcome.result, jsonrpc: "2.0", ...id } };
    if (outcome.error === "unknown-method")
      return { status: 422, json: { ok: false, error: "Unknown method", jsonrpc: "2.0", ...id } };
    // A tonlib error escapes the JSON-RPC handler to the app's TonlibException handler: no jsonrpc, no id,
    // HTTP 500 whether the call was at fault (an inactive account's get-method, an unknown block) or the
    // liteserver (LITE_SERVER_NETWORK: it is away)
    const error = outcome.error === "rejected" ? outcome.message : "LITE_SERVER_NETWORK: timeout";
    return { status: 500, json: { ok: false, error, code: 500 } };
  },
};

/**
 * Ogmios answers a request it cannot match (an unknown method, a jsonrpc other than "2.0", params that
 * are not an object, a batch) with an "Invalid request", without `method` (CardanoSolutions/ogmios@435189ae
 * server/src/Ogmios/App/Protocol.hs onUnmatchedMessage; Data/Json/Query.hs reads params as an object).
 * The text after "Invalid request: " is Aeson's parse failure, which varies with the request.
 */
const ogmiosInvalidRequest = (id: unknown, why: string): Answer => ({
  status: 400,
  json: { jsonrpc: "2.0", error: { code: -32600, message: `Invalid request: ${why}.` }, id },
});

const ogmios: JsonRpcSoftware = {
  name: "Ogmios",
  newline: false,
  contentType: "application/json;charset=utf-8",
  unbatched: ogmiosInvalidRequest(null, "must be a well-formed JSON object"),
  answer: (call, outcome) => {
    const id = call.id ?? null;
    if ("error" in outcome && outcome.error === "unknown-method")
      return ogmiosInvalidRequest(id, "unknown method in 'method' (beware names are case-sensitive)");
    if (call.jsonrpc !== "2.0")
      return ogmiosInvalidRequest(id, "invalid value for field 'jsonrpc': should be '2.0'");
    if (!(call.params === undefined || isObject(call.params)))
      return ogmiosInvalidRequest(id, "parsing params failed, expected Object");
    if ("result" in outcome)
      return { status: 200, json: { jsonrpc: "2.0", method: call.method, result: outcome.result, id } };
    // a handler's own failure is its typed error object (evaluateTransaction's 3004 with `data.reason`,
    // Ogmios/Data/Json/Ledger.hs), at 400 as every answer with an error is over HTTP
    const error =
      outcome.error === "rejected"
        ? (outcome.body ?? { code: outcome.code, message: outcome.message })
        : { code: -32603, message: "The server is not connected to a node." };
    return { status: 400, json: { jsonrpc: "2.0", method: call.method, error, id } };
  },
};

/** Zilliqa's C++ node (libjson-rpc-cpp on JsonCpp, which writes members in sorted order). */
const zilliqa: JsonRpcSoftware = {
  name: "Zilliqa",
  newline: false,
  contentType: JSON_TYPE,
  answer: (call, outcome) => {
    if (call.id === undefined) return undefined;
    const error =
      "result" in outcome
        ? undefined
        : outcome.error === "unknown-method"
          ? {
              code: -32601,
              message: `METHOD_NOT_FOUND: The method being requested is not available on this server`,
            }
          : { code: -32603, message: "INTERNAL_ERROR: Unable to process" };
    return {
      status: 200,
      json:
        error === undefined
          ? { id: call.id, jsonrpc: "2.0", result: (outcome as { result: unknown }).result }
          : { error, id: call.id, jsonrpc: "2.0" },
    };
  },
};

const geth: JsonRpcSoftware = {
  ...twoPointZero(
    "go-ethereum",
    (method) => ({ code: -32601, message: `the method ${method} does not exist/is not available` }),
    { code: -32603, message: "method handler crashed" },
    true,
  ),
  echoesRawId: true,
};

/** The node software behind each JSON-RPC interface of the registry. */
export const JSON_RPC_SOFTWARE: Readonly<Record<string, JsonRpcSoftware>> = {
  ethereum: geth,
  "tron-jsonrpc": twoPointZero(
    "java-tron /jsonrpc",
    (method) => ({ code: -32601, message: `method not found: ${method}` }),
    { code: -32000, message: "internal error" },
  ),
  substrate: {
    ...twoPointZero("Substrate (jsonrpsee)", () => ({ code: -32601, message: "Method not found" }), {
      code: 4003,
      message: "Client error: Backend error: database is busy",
    }),
    // a pruned node's state error, as polkadot 1.x answers it (paritytech/substrate-api-sidecar#1562)
    missingState: (call) => ({
      status: 200,
      json: {
        jsonrpc: "2.0",
        id: call.id,
        error: {
          code: 4003,
          message: `Client error: Api called for an unknown Block: State already discarded for ${blockHashOf(call)}`,
        },
      },
    }),
  },
  near: nearcore,
  "stellar-rpc": twoPointZero(
    "stellar-rpc (jrpc2)",
    (method) => ({ code: -32601, message: "method not found", data: method }),
    { code: -32603, message: "could not get latest ledger: context deadline exceeded" },
  ),
  toncenter,
  ogmios,
  "bitcoin-core": bitcoind28("Bitcoin Core 28"),
  "dogecoin-core": bitcoindLegacy("Dogecoin Core 1.14"),
  starknet: twoPointZero("Pathfinder", () => ({ code: -32601, message: "Method not found" }), {
    code: -32603,
    message: "Internal error",
  }),
  ckb: twoPointZero("CKB", () => ({ code: -32601, message: "Method not found" }), {
    code: -1,
    message: "CKBInternalError: database is closed",
  }),
  zilliqa,
};

/** How a REST server software writes its answers. */
export interface RestSoftware {
  readonly name: string;
  ok(body: unknown): Reply;
  /** No such route, or no such block. */
  readonly notFound: Reply;
  /** The node failing the call. */
  readonly failure: Reply;
  /** The call's own error, as the software's handler answers it (NodeRejection); a 500 for any other. */
  rejected?(rejection: NodeRejection): Reply;
  /** The credential it demands on its routes (node-guards.ts). */
  readonly guard?: Guard;
  /** It answers a GET as the POST of the same path (java-tron's servlets: doGet and doPost alike). */
  readonly getAsPost?: boolean;
  /**
   * Its answer for a path that is no route of its, where it depends on the request (Jetty's error page
   * follows the Accept header and names the path), whatever state the node is in: the server's routing
   * answers it before any handler runs. `notFound` if absent.
   */
  unknownRoute?(request: SeenRequest): Reply;
}

/**
 * Jetty 9.4.53.v20231009's answer for a path no servlet of java-tron's FullNodeHttpApiService is mapped to
 * (tronprotocol/java-tron@1e35f79a framework/build.gradle: jetty-server 9.4.53; HttpService builds a
 * ServletContextHandler at context path "/" with no error handler of its own, FullNodeHttpApiService maps
 * each servlet at its exact path, "/wallet/getnowblock" and so on, and no default servlet): ServletHandler's
 * Default404Servlet calls sendError(404), and the Server's ErrorHandler writes the page, whatever the path
 * (under /wallet/ or elsewhere) and the method (GET, POST, HEAD; any other gets no body). Read in Jetty's
 * ErrorHandler (generateAcceptableResponse, writeErrorPage, writeErrorPlain, writeErrorJson): the Accept
 * header picks the first type it can write, most specific first: text/html, text/* or any type (and no
 * Accept at all) an HTML page, text/html;charset=iso-8859-1; application/json or text/json a JSON object
 * of strings (a HashMap's order: servlet, message, url, status); text/plain the same lines as text; none of
 * them, no body. Cache-Control must-revalidate,no-cache,no-store and Server Jetty(9.4.53.v20231009) (the
 * default HttpConfiguration sends the version). The servlet holder's name ends in its instance's hash,
 * which differs per run: a fixed one here. The page's layout (the meta charset, the <hr/> around the
 * "Powered by" link) as Jetty 9.4.51 to 9.4.58 write it.
 */
const JETTY_VERSION = "9.4.53.v20231009";
const JETTY_404_SERVLET = "org.eclipse.jetty.servlet.ServletHandler$Default404Servlet-3c0be339";

/** Jetty's StringUtil.sanitizeXmlString: &, <, >, ', " escaped; other control characters as '?'. */
function sanitizeXml(text: string): string {
  const named: Readonly<Record<string, string>> = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "'": "&apos;",
    '"': "&quot;",
  };
  return [...text]
    .map((c) => {
      const code = c.charCodeAt(0);
      return named[c] ?? (code < 0x20 && c !== "\t" && c !== "\n" && c !== "\r" ? "?" : c);
    })
    .join("");
}

/** The media types of an Accept header, in the order Jetty tries them (QuotedQualityCSV, MOST_SPECIFIC_MIME_ORDERING). */
function acceptOrder(accept: string): string[] {
  const specificity = (type: string) => (type === "*/*" ? 0 : type.endsWith("/*") ? 1 : 2);
  return accept
    .split(",")
    .map((part, index) => {
      const [type = "", ...params] = part.split(";").map((p) => p.trim());
      const q = params.find((p) => p.startsWith("q="));
      return { type: type.toLowerCase(), q: q === undefined ? 1 : Number(q.slice(2)), index };
    })
    .filter((entry) => entry.type !== "" && entry.q > 0)
    .sort((a, b) => b.q - a.q || specificity(b.type) - specificity(a.type) || a.index - b.index)
    .map((entry) => entry.type);
}

function jetty404(request: SeenRequest): Reply {
  const uri = request.url.split("?")[0] ?? "/";
  const headers = { "cache-control": "must-revalidate,no-cache,no-store", server: `Jetty(${JETTY_VERSION})` };
  if (!["GET", "POST", "HEAD"].includes(request.method)) return { status: 404, headers, body: "" };
  const accept = request.headers.accept;
  const types = accept === undefined ? ["text/html"] : acceptOrder(accept);
  for (const type of types) {
    if (type === "text/html" || type === "text/*" || type === "*/*")
      return {
        status: 404,
        headers: { ...headers, "content-type": "text/html;charset=iso-8859-1" },
        body:
          '<html>\n<head>\n<meta http-equiv="Content-Type" content="text/html;charset=ISO-8859-1"/>\n' +
          "<title>Error 404 Not Found</title>\n</head>\n<body><h2>HTTP ERROR 404 Not Found</h2>\n<table>\n" +
          `<tr><th>URI:</th><td>${sanitizeXml(uri)}</td></tr>\n` +
          "<tr><th>STATUS:</th><td>404</td></tr>\n<tr><th>MESSAGE:</th><td>Not Found</td></tr>\n" +
          `<tr><th>SERVLET:</th><td>${JETTY_404_SERVLET}</td></tr>\n</table>\n` +
          `<hr/><a href="https://eclipse.org/jetty">Powered by Jetty:// ${JETTY_VERSION}</a><hr/>\n` +
          "\n</body>\n</html>\n",
      };
    if (type === "application/json" || type === "text/json")
      return {
        status: 404,
        headers: { ...headers, "content-type": type },
        body:
          `{\n"servlet":${JSON.stringify(JETTY_404_SERVLET)},\n"message":"Not Found",\n` +
          `"url":${JSON.stringify(sanitizeXml(uri))},\n"status":"404"\n}`,
      };
    if (type === "text/plain")
      return {
        status: 404,
        headers: { ...headers, "content-type": "text/plain;charset=iso-8859-1" },
        body: `HTTP ERROR 404 Not Found\nURI: ${uri}\nSTATUS: 404\nMESSAGE: Not Found\nSERVLET: ${JETTY_404_SERVLET}\n`,
      };
  }
  return { status: 404, headers, body: "" };
}

const withNewline = (body: unknown, contentType = JSON_TYPE): Reply => ({
  headers: { "content-type": contentType },
  body: `${JSON.stringify(body)}\n`,
});

export const REST_SOFTWARE: Readonly<Record<string, RestSoftware>> = {
  tezos: {
    name: "Octez",
    ok: (body) => withNewline(body),
    notFound: { status: 404, body: "" },
    failure: {
      status: 500,
      body: '[{"kind":"temporary","id":"failure","msg":"Error while applying operation: store closed"}]\n',
    },
    // a protocol's verdict on the call: [{"kind":"temporary","id":"proto.<protocol>.contract.balance_too_low",…}]
    rejected: (rejection) => ({
      status: 500,
      headers: { "content-type": JSON_TYPE },
      body: `${JSON.stringify([rejection.body ?? { kind: "permanent", id: rejection.message }])}\n`,
    }),
  },
  "vechain-thor": {
    name: "Thor",
    ok: (body) => withNewline(body, "application/json; charset=utf-8"),
    notFound: {
      status: 404,
      headers: { "content-type": "text/plain; charset=utf-8" },
      body: "404 page not found\n",
    },
    failure: {
      status: 500,
      headers: { "content-type": "text/plain; charset=utf-8" },
      body: "leveldb: closed\n",
    },
  },
  "nem-nis1": {
    name: "NIS1",
    ok: (body) => ({ body: JSON.stringify(body) }),
    notFound: {
      status: 404,
      body: '{"timeStamp":0,"error":"Not Found","message":"invalid path","status":404}',
    },
    failure: {
      status: 503,
      body: '{"timeStamp":0,"error":"Service Unavailable","message":"NIS_ILLEGAL_STATE_NOT_BOOTED","status":503}',
    },
  },
  algod: {
    name: "algod",
    ok: (body) => withNewline(body),
    notFound: { status: 404, body: '{"message":"Not Found"}\n' },
    failure: { status: 503, body: '{"message":"failed to retrieve information from the ledger"}\n' },
    guard: ALGOD_API_TOKEN,
  },
  "tron-http": {
    name: "java-tron HTTP",
    ok: (body) => withNewline(body, "application/json; charset=utf-8"),
    // what a route without an answer here gets; a path that is no route is Jetty's error page (jetty404)
    notFound: { status: 404, body: "" },
    unknownRoute: jetty404,
    failure: withNewline(
      { Error: "class java.lang.IllegalAccessException : lack of computing resources" },
      "application/json; charset=utf-8",
    ),
    // framework/src/main/java/org/tron/core/services/http/GetNowBlockServlet.java: doPost calls doGet
    getAsPost: true,
  },
};

/** The call of a request body read the way a JSON-RPC server reads it: JSON.parse, nothing of the gateway's. */
export function incomingCalls(request: SeenRequest): { batch: boolean; calls: IncomingCall[] } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(request.body);
  } catch {
    return undefined;
  }
  const raw = rawIds(request.body, Array.isArray(value));
  const read = (item: unknown, index: number): IncomingCall => {
    const object = (typeof item === "object" && item !== null ? item : {}) as Record<string, unknown>;
    const rawId = raw[index];
    return {
      ...(Object.hasOwn(object, "id") ? { id: object.id } : {}),
      ...(Object.hasOwn(object, "id") && rawId !== undefined ? { rawId } : {}),
      ...(Object.hasOwn(object, "jsonrpc") ? { jsonrpc: object.jsonrpc } : {}),
      method: typeof object.method === "string" ? object.method : "",
      ...(Object.hasOwn(object, "params") ? { params: object.params } : {}),
    };
  };
  return Array.isArray(value)
    ? { batch: true, calls: value.map(read) }
    : { batch: false, calls: [read(value, 0)] };
}

/**
 * The source text of the "id" member of the request object (or of each object of a batch, by index), read
 * from the text itself (a small JSON walker of the test's own, nothing of the gateway's). The last "id"
 * wins, as with JSON.parse. `text` is valid JSON: JSON.parse has read it.
 */
function rawIds(text: string, batch: boolean): (string | undefined)[] {
  let i = 0;
  const space = () => {
    while (i < text.length && " \t\r\n".includes(text[i] as string)) i++;
  };
  // skips one value from i, returning its source text
  const value = (): string => {
    space();
    const start = i;
    const c = text[i];
    if (c === '"') {
      i++;
      while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
      i++;
    } else if (c === "{" || c === "[") {
      const close = c === "{" ? "}" : "]";
      i++;
      space();
      if (text[i] === close) i++;
      else
        for (;;) {
          if (c === "{") {
            value();
            space();
            i++; // :
          }
          value();
          space();
          if (text[i++] === close) break;
        }
    } else {
      while (i < text.length && !",}] \t\r\n".includes(text[i] as string)) i++;
    }
    return text.slice(start, i);
  };
  // the id of the object starting at i, or undefined for something else than an object
  const idOf = (): string | undefined => {
    space();
    if (text[i] !== "{") {
      value();
      return undefined;
    }
    i++;
    space();
    let id: string | undefined;
    if (text[i] === "}") {
      i++;
      return undefined;
    }
    for (;;) {
      const key = JSON.parse(value()) as string;
      space();
      i++; // :
      const member = value();
      if (key === "id") id = member;
      space();
      if (text[i++] === "}") return id;
    }
  };
  if (!batch) return [idOf()];
  space();
  i++; // [
  space();
  const ids: (string | undefined)[] = [];
  if (text[i] === "]") return ids;
  for (;;) {
    ids.push(idOf());
    space();
    if (text[i++] === "]") return ids;
  }
}

/** An answer's JSON text, its id written as the request's own text where the answer carries it. */
function answerText(answer: Answer): string {
  if (answer.rawId === undefined) return JSON.stringify(answer.json);
  const marker = "\u0000loopback-raw-id\u0000";
  const raw = answer.rawId;
  // a function, so that a "$" in the id is not read as a replacement pattern
  return JSON.stringify({ ...answer.json, id: marker }).replace(JSON.stringify(marker), () => raw);
}

/** A whole JSON-RPC answer as `software` writes it, for one call or a batch. */
export function jsonRpcReply(
  software: JsonRpcSoftware,
  batch: boolean,
  answers: readonly Answer[],
  calls = answers.length,
): Reply {
  const end = software.newline ? "\n" : "";
  const headers = { "content-type": software.contentType };
  // HTTP 204, no body and so no Content-Type (bitcoind's WriteReply(HTTP_NO_CONTENT) sets none)
  if (batch && calls > 0 && answers.length === 0 && software.notificationsOnlyBatch === "no-content")
    return { status: 204, body: "" };
  if (!batch) {
    const only = answers[0];
    if (only === undefined) return { status: 204, body: "" };
    return { status: only.status, headers, body: `${answerText(only)}${end}` };
  }
  return { status: 200, headers, body: `[${answers.map(answerText).join(",")}]${end}` };
}
