import type { Reply, SeenRequest } from "./loopback-node.js";
import { ALGOD_API_TOKEN, type Guard, RPC_PASSWORD } from "./node-guards.js";

// How each interface's node software answers over HTTP, quirks included, so that a loopback node proves
// something about real nodes rather than about the gateway's own assumptions. Sources, read in each
// software's code (commit and file):
// - Bitcoin Core src/httprpc.cpp (JSONErrorReply) and src/rpc/request.cpp (JSONRPCReplyObj), at
//   dae0d13b; Dogecoin Core 1.14 is Bitcoin 0.14's code: answers carry "error": null, errors are HTTP 500
//   (404 for an unknown method).
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
                          ? { code: outcome.code, message: outcome.message }
                          : failure,
                  }),
            },
          },
  };
}

/**
 * Bitcoin Core up to v27 and Dogecoin Core 1.14: every answer JSON-RPC 1.0 style, whatever the request's
 * jsonrpc member says, with "error": null beside a result; an error at HTTP 500 (404 for an unknown
 * method) with its JSON body. (Bitcoin Core v28 answers a request marked "jsonrpc": "2.0" in 2.0 style,
 * at HTTP 200; the registry's bitcoin-core interface covers v25 to v28, so the older answers are the
 * ones every gateway must read.)
 */
function bitcoind(name: string): JsonRpcSoftware {
  return {
    name,
    newline: true,
    echoesRawId: true,
    contentType: JSON_TYPE,
    guard: RPC_PASSWORD,
    answer: (call, outcome) => {
      const error =
        "result" in outcome
          ? undefined
          : outcome.error === "unknown-method"
            ? { code: -32601, message: "Method not found" }
            : outcome.error === "rejected"
              ? { code: outcome.code, message: outcome.message }
              : { code: -28, message: "Loading block index…" };
      return {
        // httprpc.cpp JSONErrorReply: 400 for RPC_INVALID_REQUEST, 404 for RPC_METHOD_NOT_FOUND, else 500
        status: error === undefined ? 200 : error.code === -32601 ? 404 : error.code === -32600 ? 400 : 500,
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

const nearcore: JsonRpcSoftware = {
  name: "nearcore",
  newline: false,
  echoesRawId: true,
  contentType: JSON_TYPE,
  // A handler error, at HTTP 200, its reason in cause.name (chain/jsonrpc-primitives errors.rs,
  // RpcQueryError::GarbageCollectedBlock).
  missingState: (call) => {
    const height = (call.params as { block_id?: unknown } | undefined)?.block_id;
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
    return {
      status: 400,
      json: {
        jsonrpc: "2.0",
        method: call.method,
        error: { code: -32603, message: "The server is not connected to a node." },
        id,
      },
    };
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
  "bitcoin-core": bitcoind("Bitcoin Core 27"),
  "dogecoin-core": bitcoind("Dogecoin Core 1.14"),
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
    notFound: { status: 404, body: "" },
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
export function jsonRpcReply(software: JsonRpcSoftware, batch: boolean, answers: readonly Answer[]): Reply {
  const end = software.newline ? "\n" : "";
  const headers = { "content-type": software.contentType };
  if (!batch) {
    const only = answers[0];
    if (only === undefined) return { status: 204, headers, body: "" };
    return { status: only.status, headers, body: `${answerText(only)}${end}` };
  }
  return { status: 200, headers, body: `[${answers.map(answerText).join(",")}]${end}` };
}
