import { request } from "node:http";
import type { Dispatcher } from "undici";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../src/config/defaults.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import {
  jsonRpcResponder,
  type LoopbackNode,
  restResponder,
  type SeenRequest,
  startLoopbackNode,
} from "../support/loopback-node.js";
import { rawRequest } from "../support/raw-http.js";

// Hostile and malformed input, one row per case (docs/errors.md, docs/configuration.md's limits).
// Every row checks the HTTP status, the error in the network's own shape, and what reached the upstream
// node: nothing, except the few positive controls marked `upstream: 1`.

const K = KEYS.all;
const ALL_KEYS = Object.values(KEYS);
const SUPPORT = DEFAULT_CONFIG.support;
const BLOCK_NUMBER = rpcBody("eth_blockNumber");
const BIG_ID = "9007199254740993"; // 2^53 + 1: JSON.parse turns it into ...992
const OBJECT_ID = '{"n": 9007199254740993, "s": "x\\u0041", "a": [1.50, -0, {"z": null}]}';
const TRACE = rpcBody("debug_traceTransaction", [`0x${"ab".repeat(32)}`]);

type Expected =
  /** A JSON-RPC error object; `id` is the exact token the answer must carry. */
  | {
      readonly kind: "jsonrpc";
      readonly code: string;
      readonly rpc: number;
      readonly id: string;
      readonly data: object;
      /** nearcore's `name` and `cause`, on a network whose errors carry them (registry errorCauses). */
      readonly causes?: object;
    }
  /** A REST-style `{"error":{...}}` body (REST networks, and anything refused before the network is known). */
  | { readonly kind: "rest"; readonly code: string; readonly detail: object }
  /** Node's own bodiless answer, sent before the request reaches the gateway's handler. */
  | { readonly kind: "bodiless" };

const rpcError = (code: string, rpc: number, id = "null", data: object = {}): Expected => ({
  kind: "jsonrpc",
  code,
  rpc,
  id,
  data,
});
const restError = (code: string, detail: object = {}): Expected => ({ kind: "rest", code, detail });
const BODILESS: Expected = { kind: "bodiless" };

interface Result {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly text: string;
}

interface Row {
  readonly name: string;
  /** Sent with undici to `<label>.gw.test` ... */
  readonly label?: string;
  /** The Host header, when it is not `<label>.gw.test`. */
  readonly host?: string;
  readonly path?: string;
  readonly method?: Dispatcher.HttpMethod;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  /** ... or these bytes over a raw TCP socket, for what HTTP clients refuse to send. */
  readonly raw?: string | Buffer;
  readonly status: number;
  /** The error the caller gets; absent on positive controls, which `check` instead. */
  readonly error?: Expected;
  /** Requests the upstream nodes may see: 0 for every refusal, 1 for a positive control. */
  readonly upstream?: number;
  readonly check?: (r: Result, seen: readonly SeenRequest[]) => void;
}

/** A raw request: one valid eth_blockNumber call unless told otherwise, so only the row's defect is wrong. */
function raw(
  target: string,
  options: {
    method?: string;
    version?: string;
    host?: string | readonly string[] | null;
    headers?: readonly string[];
    body?: string | null;
  } = {},
): string {
  const method = options.method ?? "POST";
  const host = options.host === undefined ? `eth.${DOMAIN}` : options.host;
  const hosts = host === null ? [] : typeof host === "string" ? [host] : host;
  const body = options.body === undefined ? (method === "POST" ? BLOCK_NUMBER : null) : options.body;
  const lines = [`${method} ${target} ${options.version ?? "HTTP/1.1"}`, ...hosts.map((h) => `Host: ${h}`)];
  if (body !== null)
    lines.push("Content-Type: application/json", `Content-Length: ${Buffer.byteLength(body)}`);
  lines.push(...(options.headers ?? []));
  return `${lines.join("\r\n")}\r\n\r\n${body ?? ""}`;
}

const call = (id: string, method: string, params = "[]") =>
  `{"jsonrpc":"2.0","id":${id},"method":${JSON.stringify(method)},"params":${params}}`;
const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const bigBody = rpcBody("eth_call", [{ data: `0x${"00".repeat(150 * 1024)}` }, "latest"]); // ~300 KiB
const manyHeaders = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`x-filler-${i}`, "1"]));

const rows: Row[] = [
  // ---- the body is not a valid JSON-RPC request --------------------------------------------------------
  {
    name: "malformed JSON",
    label: "eth",
    path: `/${K}/`,
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber",',
    status: 400,
    error: rpcError("PARSE_ERROR", -32700),
  },
  {
    name: "a body that is not JSON at all",
    label: "eth",
    path: `/${K}/`,
    body: "method=eth_blockNumber",
    status: 400,
    error: rpcError("PARSE_ERROR", -32700),
  },
  {
    name: "two concatenated JSON objects, the second calling a denied method",
    label: "eth",
    path: `/${K}/`,
    body: `${BLOCK_NUMBER}\n${call("2", "debug_traceTransaction")}`,
    status: 400,
    error: rpcError("PARSE_ERROR", -32700),
  },
  {
    name: "an empty body",
    label: "eth",
    path: `/${K}/`,
    body: "",
    status: 400,
    error: rpcError("PARSE_ERROR", -32700),
  },
  {
    name: 'wrong envelope: jsonrpc "1.0" on eth',
    label: "eth",
    path: `/${K}/`,
    body: '{"jsonrpc":"1.0","id":1,"method":"eth_blockNumber","params":[]}',
    status: 400,
    error: rpcError("INVALID_REQUEST", -32600, "1"),
  },
  {
    name: "wrong envelope: jsonrpc member missing on eth",
    label: "eth",
    path: `/${K}/`,
    body: '{"id":1,"method":"eth_blockNumber","params":[]}',
    status: 400,
    error: rpcError("INVALID_REQUEST", -32600, "1"),
  },
  {
    name: "wrong envelope: method is not a string",
    label: "eth",
    path: `/${K}/`,
    body: '{"jsonrpc":"2.0","id":1,"method":42,"params":[]}',
    status: 400,
    error: rpcError("INVALID_REQUEST", -32600, "1"),
  },
  {
    name: "wrong envelope: method is an array holding an allowed name",
    label: "eth",
    path: `/${K}/`,
    body: '{"jsonrpc":"2.0","id":1,"method":["eth_blockNumber"],"params":[]}',
    status: 400,
    error: rpcError("INVALID_REQUEST", -32600, "1"),
  },
  {
    name: "wrong envelope: params an object on eth (positional only)",
    label: "eth",
    path: `/${K}/`,
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":{"address":"0x0"}}',
    status: 400,
    error: rpcError("INVALID_REQUEST", -32600, "1"),
  },
  {
    name: "wrong envelope: an array id is not echoed (id null)",
    label: "eth",
    path: `/${K}/`,
    body: '{"jsonrpc":"2.0","id":[1],"method":"eth_blockNumber","params":[]}',
    status: 400,
    error: rpcError("INVALID_REQUEST", -32600, "null"),
  },
  {
    name: "wrong envelope: the body is a JSON string",
    label: "eth",
    path: `/${K}/`,
    body: '"eth_blockNumber"',
    status: 400,
    error: rpcError("INVALID_REQUEST", -32600),
  },

  // ---- nesting ---------------------------------------------------------------------------------------
  {
    name: "100000 nested arrays (200 KB, under the size cap) get NESTING_TOO_DEEP, not a crash",
    label: "eth",
    path: `/${K}/`,
    body: nested(100_000),
    status: 400,
    error: rpcError("NESTING_TOO_DEEP", -32600),
  },
  {
    name: "100000 unclosed [ get NESTING_TOO_DEEP",
    label: "eth",
    path: `/${K}/`,
    body: "[".repeat(100_000),
    status: 400,
    error: rpcError("NESTING_TOO_DEEP", -32600),
  },
  {
    name: '40000 nested {"a": objects get NESTING_TOO_DEEP',
    label: "eth",
    path: `/${K}/`,
    body: `${'{"a":'.repeat(40_000)}1${"}".repeat(40_000)}`,
    status: 400,
    error: rpcError("NESTING_TOO_DEEP", -32600),
  },
  {
    name: "params nested 100 deep inside an allowed call get NESTING_TOO_DEEP",
    label: "eth",
    path: `/${K}/`,
    body: call("1", "eth_call", `[${nested(100)}]`),
    status: 400,
    error: rpcError("NESTING_TOO_DEEP", -32600),
  },

  // ---- prototype pollution -----------------------------------------------------------------------------
  {
    name: "__proto__ holding the whole envelope is not read as the request",
    label: "eth",
    path: `/${K}/`,
    body: `{"__proto__":${BLOCK_NUMBER}}`,
    status: 400,
    error: rpcError("INVALID_REQUEST", -32600),
  },
  {
    name: "__proto__ member holding method and a polluting member",
    label: "eth",
    path: `/${K}/`,
    body: '{"jsonrpc":"2.0","id":1,"__proto__":{"method":"eth_blockNumber","polluted":true}}',
    status: 400,
    error: rpcError("INVALID_REQUEST", -32600, "1"),
  },
  {
    name: "__proto__ inside params of a method that is not allowed",
    label: "eth",
    path: `/${K}/`,
    body: call(
      "1",
      "eth_foo",
      '[{"__proto__":{"polluted":true}},{"constructor":{"prototype":{"polluted":true}}}]',
    ),
    status: 403,
    error: rpcError("METHOD_NOT_FOUND", -32601, "1", { method: "eth_foo" }),
  },
  {
    name: "__proto__ in a batch member",
    label: "eth",
    path: `/${K}/`,
    body: '[{"__proto__":{"polluted":true,"jsonrpc":"2.0","method":"eth_blockNumber"}}]',
    status: 200,
    check: (r) => {
      const answers = JSON.parse(r.text) as unknown[];
      expect(answers).toEqual([
        {
          jsonrpc: "2.0",
          id: null,
          error: expect.objectContaining({
            code: -32600,
            data: expect.objectContaining({ code: "INVALID_REQUEST" }),
          }),
        },
      ]);
    },
  },
  ...["__proto__", "constructor", "hasOwnProperty", "toString"].map(
    (method): Row => ({
      name: `method named ${method} (an Object.prototype name) is not found`,
      label: "eth",
      path: `/${K}/`,
      body: call("1", method),
      status: 403,
      error: rpcError("METHOD_NOT_FOUND", -32601, "1", { method }),
    }),
  ),
  {
    name: "POSITIVE CONTROL (reaches upstream): an allowed call with __proto__ inside params is relayed unchanged",
    label: "eth",
    path: `/${K}/`,
    body: call(
      "7",
      "eth_call",
      '[{"to":"0x0000000000000000000000000000000000000001","__proto__":{"polluted":true}},"latest"]',
    ),
    status: 200,
    upstream: 1,
    check: (r, seen) => {
      expect(JSON.parse(r.text)).toEqual({ jsonrpc: "2.0", id: 7, result: "0x" });
      expect(seen[0]?.body).toBe(
        call(
          "7",
          "eth_call",
          '[{"to":"0x0000000000000000000000000000000000000001","__proto__":{"polluted":true}},"latest"]',
        ),
      );
    },
  },
  {
    name: "POSITIVE CONTROL (reaches upstream): a valid call with an extra __proto__ member goes up without it",
    label: "eth",
    path: `/${K}/`,
    body: '{"jsonrpc":"2.0","id":8,"method":"eth_blockNumber","params":[],"__proto__":{"polluted":true}}',
    status: 200,
    upstream: 1,
    check: (r, seen) => {
      expect(JSON.parse(r.text)).toEqual({ jsonrpc: "2.0", id: 8, result: "0x2a" });
      expect(seen[0]?.body).toBe(call("8", "eth_blockNumber"));
    },
  },

  // ---- duplicate members -------------------------------------------------------------------------------
  {
    name: "duplicate method keys",
    label: "eth",
    path: `/${K}/`,
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","method":"debug_traceTransaction","params":[]}',
    status: 400,
    error: rpcError("DUPLICATE_MEMBER", -32600, "null", { member: "method" }),
  },
  {
    name: "duplicate method keys, the second escaped as met\\u0068od",
    label: "eth",
    path: `/${K}/`,
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","met\\u0068od":"debug_traceTransaction","params":[]}',
    status: 400,
    error: rpcError("DUPLICATE_MEMBER", -32600, "null", { member: "method" }),
  },
  {
    name: "duplicate method keys, the first escaped, the denied one first",
    label: "eth",
    path: `/${K}/`,
    body: '{"jsonrpc":"2.0","id":1,"\\u006dethod":"admin_addPeer","method":"eth_blockNumber","params":[]}',
    status: 400,
    error: rpcError("DUPLICATE_MEMBER", -32600, "null", { member: "method" }),
  },
  {
    name: "duplicate params keys",
    label: "eth",
    path: `/${K}/`,
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x1","latest"],"params":{"a":1}}',
    status: 400,
    error: rpcError("DUPLICATE_MEMBER", -32600, "null", { member: "params" }),
  },
  {
    name: "duplicate method keys inside a batch member",
    label: "eth",
    path: `/${K}/`,
    body: `[${BLOCK_NUMBER},{"jsonrpc":"2.0","id":2,"method":"eth_chainId","method":"debug_traceTransaction"}]`,
    status: 400,
    error: rpcError("DUPLICATE_MEMBER", -32600, "null", { member: "method" }),
  },
  // Go's encoding/json (geth, Erigon) reads a member in any case, the last of two winning: "Method" would be
  // the method geth calls, past the allow-list's check of "method"
  {
    name: "an envelope member again in another case (Method after method)",
    label: "eth",
    path: `/${K}/`,
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","Method":"admin_peers","params":[]}',
    status: 400,
    error: rpcError("INVALID_REQUEST", -32600, "null", { member: "Method" }),
  },
  {
    name: "an envelope member in another case alone (PARAMS, and paramſ with a long s)",
    label: "eth",
    path: `/${K}/`,
    body: `[{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","PARAMS":[{"fromBlock":"0x0"}]},{"jsonrpc":"2.0","id":2,"method":"eth_chainId","param\u017f":[]}]`,
    status: 400,
    error: rpcError("INVALID_REQUEST", -32600, "null", { member: "PARAMS" }),
  },
  // and so does a member of params the gateway reads by name (a range's bounds, a call's address, a tracer)
  {
    name: "a range bound in another case (FROMBLOCK): a Go node scans from it, past the range guard",
    label: "eth",
    path: `/${K}/`,
    body: '{"jsonrpc":"2.0","id":3,"method":"eth_getLogs","params":[{"FROMBLOCK":"0x0"}]}',
    status: 400,
    error: rpcError("INVALID_REQUEST", -32600, "3", { member: "FROMBLOCK" }),
  },
  {
    name: "a call's address twice, in two cases (to, then To)",
    label: "eth",
    path: `/${K}/`,
    body: `{"jsonrpc":"2.0","id":4,"method":"eth_call","params":[{"to":"0x${"aa".repeat(20)}","To":"0x${"bb".repeat(20)}"},"latest"]}`,
    status: 400,
    error: rpcError("INVALID_REQUEST", -32600, "4", { member: "To" }),
  },

  // ---- sizes -------------------------------------------------------------------------------------------
  // on a network whose transactions carry no blobs (eth takes a blob transaction's body: blob-bodies.test.ts)
  {
    name: "a body over 256 KiB with Content-Length",
    label: "avax",
    path: `/${K}/`,
    body: bigBody,
    status: 413,
    error: rpcError("BODY_TOO_LARGE", -32021),
  },
  {
    name: "a chunked body over 256 KiB (no Content-Length)",
    raw: `${raw(`/${K}/`, { host: `avax.${DOMAIN}`, body: null, headers: ["Content-Type: application/json", "Transfer-Encoding: chunked"] })}${bigBody.length.toString(16)}\r\n${bigBody}\r\n0\r\n\r\n`,
    status: 413,
    error: rpcError("BODY_TOO_LARGE", -32021),
  },
  {
    name: "Expect: 100-continue and a declared body over 256 KiB: the refusal, never 100 Continue",
    raw: raw(`/${K}/`, {
      body: null,
      headers: ["Content-Type: application/json", "Content-Length: 999999999", "Expect: 100-continue"],
    }),
    status: 413,
    error: rpcError("BODY_TOO_LARGE", -32021),
  },
  {
    name: "Expect: 100-continue with an unknown key: the refusal, never 100 Continue",
    raw: raw("/FNnoSuchKey0000000000000000000/", {
      body: null,
      headers: ["Content-Type: application/json", "Content-Length: 60", "Expect: 100-continue"],
    }),
    status: 401,
    error: rpcError("UNAUTHORIZED", -32040),
  },
  {
    name: "a batch of 101 calls",
    label: "eth",
    path: `/${K}/`,
    body: `[${Array.from({ length: 101 }, (_, i) => call(String(i), "eth_blockNumber")).join(",")}]`,
    status: 413,
    error: rpcError("BATCH_TOO_LARGE", -32014),
  },
  {
    name: "an empty batch",
    label: "eth",
    path: `/${K}/`,
    body: "[ ]",
    status: 400,
    error: rpcError("EMPTY_BATCH", -32600),
  },
  {
    name: "a batch on near, whose node takes no batches",
    label: "near",
    path: `/${K}/`,
    body: `[${call("1", "status")}]`,
    status: 400,
    // in nearcore's shape, which near-api-js reads: the refusal's message and code as the SDK shows it
    error: {
      ...rpcError("BATCH_NOT_SUPPORTED", -32600),
      causes: {
        name: "INTERNAL_ERROR",
        cause: {
          name: "INTERNAL_ERROR",
          info: { error_message: "This network's node does not accept batches (BATCH_NOT_SUPPORTED)" },
        },
      },
    } as Expected,
  },
  {
    name: "a batch of non-objects: one INVALID_REQUEST per item, HTTP 200",
    label: "eth",
    path: `/${K}/`,
    body: '[1,"eth_blockNumber"]',
    status: 200,
    check: (r) => {
      const item = {
        jsonrpc: "2.0",
        id: null,
        error: expect.objectContaining({
          code: -32600,
          data: expect.objectContaining({ code: "INVALID_REQUEST" }),
        }),
      };
      expect(JSON.parse(r.text)).toEqual([item, item]);
    },
  },
  {
    name: "150 request headers",
    label: "eth",
    path: `/${K}/`,
    body: BLOCK_NUMBER,
    headers: manyHeaders,
    status: 431,
    error: restError("HEADERS_TOO_LARGE"),
  },
  {
    name: "a 20 KB header (over maxHeaderBytes): Node's bodiless 431",
    label: "eth",
    path: `/${K}/`,
    body: BLOCK_NUMBER,
    headers: { "x-filler": "a".repeat(20_000) },
    status: 431,
    error: BODILESS,
  },

  // ---- Host --------------------------------------------------------------------------------------------
  {
    name: "no Host header (HTTP/1.1)",
    raw: raw(`/${K}/`, { host: null }),
    status: 400,
    error: restError("BAD_HOST"),
  },
  {
    name: "no Host header (HTTP/1.0)",
    raw: raw(`/${K}/`, { host: null, version: "HTTP/1.0" }),
    status: 400,
    error: restError("BAD_HOST"),
  },
  {
    name: "two identical Host headers",
    raw: raw(`/${K}/`, { host: [`eth.${DOMAIN}`, `eth.${DOMAIN}`] }),
    status: 400,
    error: restError("BAD_HOST"),
  },
  {
    name: "two Host headers naming different networks",
    raw: raw(`/${K}/`, { host: [`eth.${DOMAIN}`, `bsc.${DOMAIN}`] }),
    status: 400,
    error: restError("BAD_HOST"),
  },
  {
    // RFC 9112 §3.2: a server MUST answer 400 to any request with more than one Host, preflights included.
    name: "a CORS preflight (OPTIONS) with two Host headers",
    raw: raw(`/${K}/`, {
      method: "OPTIONS",
      host: [`eth.${DOMAIN}`, "evil.example"],
      headers: ["Origin: https://dapp.example", "Access-Control-Request-Method: POST"],
    }),
    status: 400,
    error: restError("BAD_HOST"),
  },
  ...[
    `eth.${DOMAIN}@evil.example`,
    `eth.${DOMAIN}, x.${DOMAIN}`,
    `eth.${DOMAIN} evil`,
    `eth.${DOMAIN}:80x`,
    `eth.${DOMAIN}..`,
    "",
  ].map(
    (host): Row => ({
      name: `malformed Host ${JSON.stringify(host)}`,
      raw: raw(`/${K}/`, { host }),
      status: 400,
      error: restError("BAD_HOST"),
    }),
  ),
  {
    name: "POSITIVE CONTROL (reaches upstream): Host in upper case with a trailing dot and a port",
    raw: raw(`/${K}/`, { host: `ETH.${DOMAIN.toUpperCase()}.:443` }),
    status: 200,
    upstream: 1,
    check: (r, seen) => {
      expect(JSON.parse(r.text)).toEqual({ jsonrpc: "2.0", id: 1, result: "0x2a" });
      expect(seen[0]?.url).toBe("/");
    },
  },
  {
    name: "an unknown label",
    label: "nope",
    path: `/${K}/`,
    body: BLOCK_NUMBER,
    status: 404,
    error: restError("UNKNOWN_NETWORK"),
  },
  {
    name: "a label under another domain",
    label: "eth",
    host: "eth.evil.example",
    path: `/${K}/`,
    body: BLOCK_NUMBER,
    status: 404,
    error: restError("UNKNOWN_NETWORK"),
  },
  {
    name: "a label one level too deep",
    raw: raw(`/${K}/`, { host: `x.eth.${DOMAIN}` }),
    status: 404,
    error: restError("UNKNOWN_NETWORK"),
  },
  {
    name: "X-Forwarded-Host is not believed",
    raw: raw(`/${K}/`, { host: `nope.${DOMAIN}`, headers: [`X-Forwarded-Host: eth.${DOMAIN}`] }),
    status: 404,
    error: restError("UNKNOWN_NETWORK"),
  },

  // ---- request target ----------------------------------------------------------------------------------
  {
    name: "absolute-form target naming another host (GET)",
    raw: raw("http://evil.example/x", { method: "GET" }),
    status: 400,
    error: restError("BAD_HOST"),
  },
  {
    name: "absolute-form target naming another host, with a key and a valid call",
    raw: raw(`http://evil.example/${K}/`),
    status: 400,
    error: restError("BAD_HOST"),
  },
  {
    name: "absolute-form target with userinfo",
    raw: raw(`http://eth.${DOMAIN}@evil.example/${K}/`),
    status: 400,
    error: restError("BAD_HOST", { reason: "the request target carries credentials (user:password@)" }),
  },
  {
    name: "absolute-form target with user:password@ before the right host: said as such, not as a port",
    raw: raw(`http://u:p@eth.${DOMAIN}/${K}/`),
    status: 400,
    error: restError("BAD_HOST", { reason: "the request target carries credentials (user:password@)" }),
  },
  {
    name: "POSITIVE CONTROL (reaches upstream): absolute-form target naming the Host itself",
    raw: raw(`http://eth.${DOMAIN}/${K}/`),
    status: 200,
    upstream: 1,
    check: (r, seen) => {
      expect(JSON.parse(r.text)).toEqual({ jsonrpc: "2.0", id: 1, result: "0x2a" });
      expect(seen[0]?.url).toBe("/");
    },
  },
  {
    name: "asterisk-form target",
    raw: raw("*", { method: "GET" }),
    status: 400,
    error: restError("BAD_PATH"),
  },
  ...[
    "//evil.example/x",
    `//evil.example/${K}/`,
    "/\\evil.example/x",
    `/${K}/\\evil.example/x`,
    `/${K}/../other`,
    `/${K}/..`,
    `/../${K}/`,
    `/${K}/./`,
    `/${K}/%2e%2e/x`,
    `/${K}/%2E%2E/x`,
    `/${K}/.%2e/x`,
    `/${K}/..%2fother`,
    `/${K}%2f..%2fother`,
    `/${K}/%5cevil`,
    `/${K}/%00`,
    `/${K}//x`,
    `/${K}/x#frag`,
  ].map(
    (target): Row => ({
      name: `path ${JSON.stringify(target.replace(K, "KEY"))}`,
      raw: raw(target),
      status: 400,
      error: rpcError("BAD_PATH", -32600),
    }),
  ),
  {
    name: "a raw NUL byte in the target: Node's bodiless 400",
    raw: raw(`/${K}/\0x`),
    status: 400,
    error: BODILESS,
  },
  {
    name: "Content-Length and Transfer-Encoding together (smuggling): Node's bodiless 400",
    raw: raw(`/${K}/`, { headers: ["Transfer-Encoding: chunked"] }),
    status: 400,
    error: BODILESS,
  },

  ...["gzip, chunked", "identity, chunked"].map(
    (coding): Row => ({
      name: `Transfer-Encoding: ${coding}, which Node's parser reads as plain chunked: 400 before any body is read`,
      raw: `${raw(`/${K}/`, { body: null, headers: ["Content-Type: application/json", `Transfer-Encoding: ${coding}`] })}${BLOCK_NUMBER.length.toString(16)}\r\n${BLOCK_NUMBER}\r\n0\r\n\r\n`,
      status: 400,
      error: rpcError("UNSUPPORTED_TRANSFER_ENCODING", -32600),
      check: (r) => expect(r.headers.connection).toBe("close"),
    }),
  ),
  {
    name: "positive control: Transfer-Encoding: Chunked (codings are case-insensitive) is relayed",
    raw: `${raw(`/${K}/`, { body: null, headers: ["Content-Type: application/json", "Transfer-Encoding: Chunked"] })}${BLOCK_NUMBER.length.toString(16)}\r\n${BLOCK_NUMBER}\r\n0\r\n\r\n`,
    status: 200,
    upstream: 1,
    check: (r, seen) => {
      expect(JSON.parse(r.text)).toMatchObject({ id: 1, result: "0x2a" });
      expect(seen[0]?.body).toBe(BLOCK_NUMBER);
    },
  },

  // ---- keys ----------------------------------------------------------------------------------------------
  {
    name: "no key",
    label: "eth",
    path: "/",
    body: BLOCK_NUMBER,
    status: 401,
    error: rpcError("UNAUTHORIZED", -32040),
  },
  {
    name: "an unknown key",
    label: "eth",
    path: "/FNunknownKey000000000000000000/",
    body: BLOCK_NUMBER,
    status: 401,
    error: rpcError("UNAUTHORIZED", -32040),
  },
  {
    name: "an unknown key on TRON's REST API: the REST shape its path's family answers in",
    label: "trx",
    path: "/FNunknownKey000000000000000000/wallet/getnowblock",
    body: "{}",
    status: 401,
    error: restError("UNAUTHORIZED"),
  },
  {
    name: "an unknown key on TRON's /jsonrpc: the JSON-RPC shape",
    label: "trx",
    path: "/FNunknownKey000000000000000000/jsonrpc",
    body: BLOCK_NUMBER,
    status: 401,
    error: rpcError("UNAUTHORIZED", -32040),
  },
  {
    name: "a malformed key",
    label: "eth",
    path: "/not-a-key/",
    body: BLOCK_NUMBER,
    status: 401,
    error: rpcError("UNAUTHORIZED", -32040),
  },
  {
    name: "a valid key in another case",
    label: "eth",
    path: `/${K.toLowerCase()}/`,
    body: BLOCK_NUMBER,
    status: 401,
    error: rpcError("UNAUTHORIZED", -32040),
  },
  {
    name: "a valid key with a suffix",
    label: "eth",
    path: `/${K}x/`,
    body: BLOCK_NUMBER,
    status: 401,
    error: rpcError("UNAUTHORIZED", -32040),
  },
  {
    name: "a key in the query string instead of the path",
    label: "eth",
    path: `/?key=${K}`,
    body: BLOCK_NUMBER,
    status: 401,
    error: rpcError("UNAUTHORIZED", -32040),
  },
  {
    name: "a key without access to the network (ethOnly on bsc)",
    label: "bsc",
    path: `/${KEYS.ethOnly}/`,
    body: BLOCK_NUMBER,
    status: 403,
    // a valid key: its body is read for the call's id, as every refusal after the key names it
    error: rpcError("NETWORK_FORBIDDEN", -32041, "1", { network: "bsc" }),
  },

  // ---- methods -------------------------------------------------------------------------------------------
  {
    name: "a method not in the standard set (eth_foo)",
    label: "eth",
    path: `/${K}/`,
    body: call("1", "eth_foo"),
    status: 403,
    error: rpcError("METHOD_NOT_FOUND", -32601, "1", { method: "eth_foo" }),
  },
  {
    name: "a denied admin method (admin_addPeer)",
    label: "eth",
    path: `/${K}/`,
    body: call("1", "admin_addPeer", '["enode://x@127.0.0.1:30303"]'),
    status: 403,
    error: rpcError("METHOD_NOT_FOUND", -32601, "1", { method: "admin_addPeer" }),
  },
  {
    name: "a denied method in another case (ADMIN_addPeer)",
    label: "eth",
    path: `/${K}/`,
    body: call("1", "ADMIN_addPeer"),
    status: 403,
    error: rpcError("METHOD_NOT_FOUND", -32601, "1", { method: "ADMIN_addPeer" }),
  },
  {
    name: "an allowed method name with trailing whitespace",
    label: "eth",
    path: `/${K}/`,
    body: call("1", "eth_blockNumber "),
    status: 403,
    error: rpcError("METHOD_NOT_FOUND", -32601, "1", { method: "eth_blockNumber " }),
  },
  {
    name: "a method disabled on the shared plan (debug_traceTransaction with KEYS.all)",
    label: "eth",
    path: `/${K}/`,
    body: TRACE,
    status: 403,
    error: rpcError("METHOD_NOT_ON_PLAN", -32042, "1", {
      method: "debug_traceTransaction",
      support: SUPPORT.email,
      dedicatedNode: SUPPORT.dedicatedNodeUrl,
    }),
  },
  {
    name: "POSITIVE CONTROL (reaches upstream): debug_traceTransaction with KEYS.dedicated",
    label: "eth",
    path: `/${KEYS.dedicated}/`,
    body: TRACE,
    status: 200,
    upstream: 1,
    check: (r, seen) => {
      expect(JSON.parse(r.text)).toEqual({ jsonrpc: "2.0", id: 1, result: { gas: 21000, failed: false } });
      expect(seen[0]).toMatchObject({ method: "POST", url: "/", body: TRACE });
    },
  },
  {
    name: "a WebSocket-only method over HTTP (eth_subscribe)",
    label: "eth",
    path: `/${K}/`,
    body: call("1", "eth_subscribe", '["newHeads"]'),
    status: 400,
    error: rpcError("WEBSOCKET_ONLY", -32043, "1", { method: "eth_subscribe" }),
  },

  // ---- paths and HTTP methods ----------------------------------------------------------------------------
  ...["/ext/bc/X", "/ext/bc/P/", "/ext/P", "/ext/bc/X/events"].map(
    (sub): Row => ({
      name: `a dedicated-only interface path on avax (${sub})`,
      label: "avax",
      path: `/${K}${sub}`,
      body: BLOCK_NUMBER,
      status: 403,
      // a valid key: its body is read for the call's id, as for a key refused its network
      error: rpcError("DEDICATED_ONLY_INTERFACE", -32044, "1", {
        interface: "Avalanche X-Chain and P-Chain",
        support: SUPPORT.email,
        dedicatedNode: SUPPORT.dedicatedNodeUrl,
      }),
    }),
  ),
  {
    name: "a path under a JSON-RPC root",
    label: "eth",
    path: `/${K}/admin`,
    body: BLOCK_NUMBER,
    status: 404,
    error: rpcError("NOT_FOUND", -32601, "1"),
  },
  {
    name: "GET on a JSON-RPC root",
    label: "eth",
    path: `/${K}/`,
    method: "GET",
    status: 405,
    error: rpcError("HTTP_METHOD_NOT_ALLOWED", -32600),
    check: (r) => expect(r.headers.allow).toBe("POST"),
  },
  {
    name: "PUT on a JSON-RPC root",
    label: "eth",
    path: `/${K}/`,
    method: "PUT",
    body: BLOCK_NUMBER,
    status: 405,
    error: rpcError("HTTP_METHOD_NOT_ALLOWED", -32600),
    check: (r) => expect(r.headers.allow).toBe("POST"),
  },
  {
    name: "a REST route that is not listed (GET /network/peers on xtz)",
    label: "xtz",
    path: `/${K}/network/peers`,
    status: 404,
    error: restError("NOT_FOUND"),
  },
  {
    name: "a REST path made of Object.prototype names (GET /__proto__/constructor on xtz)",
    label: "xtz",
    path: `/${K}/__proto__/constructor`,
    status: 404,
    error: restError("NOT_FOUND"),
  },
  {
    name: "a REST method not allowed (DELETE /version on xtz)",
    label: "xtz",
    path: `/${K}/version`,
    method: "DELETE",
    status: 405,
    error: restError("HTTP_METHOD_NOT_ALLOWED", { allow: ["GET", "HEAD"] }),
    check: (r) => expect(r.headers.allow).toBe("GET, HEAD"),
  },
  {
    name: "a REST route on the dedicated plan only (GET .../context/contracts with KEYS.all)",
    label: "xtz",
    path: `/${K}/chains/main/blocks/head/context/contracts`,
    status: 403,
    error: restError("METHOD_NOT_ON_PLAN", {
      support: SUPPORT.email,
      dedicatedNode: SUPPORT.dedicatedNodeUrl,
    }),
  },

  // ---- media types ---------------------------------------------------------------------------------------
  {
    name: "a text/plain JSON-RPC body on eth",
    label: "eth",
    path: `/${K}/`,
    body: BLOCK_NUMBER,
    headers: { "content-type": "text/plain" },
    status: 415,
    error: rpcError("UNSUPPORTED_MEDIA_TYPE", -32600),
  },
  {
    name: "a gzip-encoded body: refused by its coding, not read as JSON that is not",
    label: "eth",
    path: `/${K}/`,
    body: BLOCK_NUMBER,
    headers: { "content-type": "application/json", "content-encoding": "gzip" },
    status: 415,
    error: rpcError("UNSUPPORTED_MEDIA_TYPE", -32600, "null", {
      reason: "the body is gzip-encoded (Content-Encoding); send it uncompressed",
    }),
  },
  {
    name: "a JSON-RPC body without Content-Type on eth",
    raw: raw(`/${K}/`, { body: null, headers: [`Content-Length: ${BLOCK_NUMBER.length}`] }) + BLOCK_NUMBER,
    status: 415,
    error: rpcError("UNSUPPORTED_MEDIA_TYPE", -32600),
  },
  // geth's rpc package (Erigon, bsc, coreth) reads all three types (rpc/http.go acceptedContentTypes), and
  // jsonrpc4j sends application/json-rpc: refused with 415 they were, where the node answers
  ...["application/json-rpc", "application/jsonrequest"].map(
    (type): Row => ({
      name: `POSITIVE CONTROL (reaches upstream): a JSON-RPC body sent as ${type} on eth, as geth reads it`,
      label: "eth",
      path: `/${K}/`,
      body: BLOCK_NUMBER,
      headers: { "content-type": type },
      status: 200,
      upstream: 1,
      check: (r, seen) => {
        expect(JSON.parse(r.text)).toMatchObject({ result: "0x2a" });
        // the node gets the gateway's own type
        expect(seen[0]?.headers["content-type"]).toBe("application/json");
      },
    }),
  ),
  {
    name: "POSITIVE CONTROL (reaches upstream): a text/plain JSON-RPC 1.0 body on btc",
    label: "btc",
    path: `/${K}/`,
    body: '{"jsonrpc":"1.0","id":"curltest","method":"getblockcount","params":[]}',
    headers: { "content-type": "text/plain;" },
    status: 200,
    upstream: 1,
    check: (r, seen) => {
      expect(JSON.parse(r.text)).toEqual({ jsonrpc: "2.0", id: "curltest", result: 800000 });
      expect(seen[0]?.body).toBe('{"jsonrpc":"1.0","id":"curltest","method":"getblockcount","params":[]}');
    },
  },
  {
    name: "POSITIVE CONTROL (reaches upstream): curl -d's form type on btc, which bitcoind reads as it reads any body",
    label: "btc",
    path: `/${K}/`,
    body: '{"jsonrpc":"1.0","id":"curltest","method":"getblockcount","params":[]}',
    headers: { "content-type": "application/x-www-form-urlencoded" },
    status: 200,
    upstream: 1,
    check: (r) => expect(JSON.parse(r.text)).toMatchObject({ id: "curltest", result: 800000 }),
  },
  {
    name: "a JSON-RPC 1.0 call refused on btc is answered in 1.0's shape, as bitcoind answers it",
    label: "btc",
    path: `/${K}/`,
    body: '{"jsonrpc":"1.0","id":"curltest","method":"stop","params":[]}',
    headers: { "content-type": "text/plain" },
    status: 403,
    check: (r) => {
      const answer = JSON.parse(r.text) as Record<string, unknown>;
      expect(Object.keys(answer)).toEqual(["result", "error", "id"]);
      expect(answer).toMatchObject({
        result: null,
        id: "curltest",
        error: { data: { code: "METHOD_NOT_FOUND" } },
      });
    },
  },
  // refused before its body was read (the key's network, a path no route has: bitcoin-cli -rpcwallet's
  // /wallet/<name>), whose body is read for its id: it came in 2.0's shape
  ...[
    ["a key without btc", KEYS.ethOnly, "/", 403, "NETWORK_FORBIDDEN"],
    ["bitcoin-cli -rpcwallet's path", K, "/wallet/w1", 404, "NOT_FOUND"],
  ].map(
    ([why, key, path, status, code]): Row => ({
      name: `a JSON-RPC 1.0 call refused before its body on btc (${why}) is answered in 1.0's shape`,
      label: "btc",
      path: `/${key}${path}`,
      body: '{"id":7,"method":"getblockcount","params":[]}',
      headers: { "content-type": "text/plain" },
      status: status as number,
      check: (r) => {
        const answer = JSON.parse(r.text) as Record<string, unknown>;
        expect(Object.keys(answer).sort()).toEqual(["error", "id", "result"]);
        expect(answer).toMatchObject({ result: null, id: 7, error: { data: { code } } });
      },
    }),
  ),
  {
    name: "a JSON-RPC 2.0 call refused on btc keeps 2.0's shape",
    label: "btc",
    path: `/${K}/`,
    body: '{"jsonrpc":"2.0","id":7,"method":"stop","params":[]}',
    headers: { "content-type": "application/json" },
    status: 403,
    error: rpcError("METHOD_NOT_FOUND", -32601, "7"),
  },

  // ---- ids and partial batches ---------------------------------------------------------------------------
  {
    name: "an id beyond 2^53 comes back with the same digits",
    label: "eth",
    path: `/${K}/`,
    body: call(BIG_ID, "eth_foo"),
    status: 403,
    error: rpcError("METHOD_NOT_FOUND", -32601, BIG_ID),
  },
  {
    name: "an object id comes back with the same text",
    label: "eth",
    path: `/${K}/`,
    body: call(OBJECT_ID, "eth_foo"),
    status: 403,
    error: rpcError("METHOD_NOT_FOUND", -32601, OBJECT_ID),
  },
  {
    name: "POSITIVE CONTROL (reaches upstream): an id beyond 2^53 keeps its digits through the upstream",
    label: "eth",
    path: `/${K}/`,
    body: call(BIG_ID, "eth_blockNumber"),
    status: 200,
    upstream: 1,
    check: (r, seen) => {
      expect(seen[0]?.body).toBe(call(BIG_ID, "eth_blockNumber"));
      expect(r.text).toBe(`{"jsonrpc":"2.0","id":${BIG_ID},"result":"0x2a"}`);
    },
  },
  {
    name: "POSITIVE CONTROL (reaches upstream): a batch goes on as sent, ids with all their digits",
    label: "eth",
    path: `/${K}/`,
    body: `[${call(BIG_ID, "eth_blockNumber")},${call(OBJECT_ID, "eth_blockNumber")}]`,
    status: 200,
    upstream: 1,
    check: (_r, seen) => {
      expect(seen[0]?.body).toBe(
        `[${call(BIG_ID, "eth_blockNumber")},${call(OBJECT_ID, "eth_blockNumber")}]`,
      );
    },
  },
  {
    name: "POSITIVE CONTROL (reaches upstream): a batch with spaces and an extra member goes on re-serialised",
    label: "eth",
    path: `/${K}/`,
    body: `[ {"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[],"x":1} ,\n${call("2", "eth_blockNumber")} ]`,
    status: 200,
    upstream: 1,
    check: (_r, seen) => {
      expect(seen[0]?.body).toBe(`[${call("1", "eth_blockNumber")},${call("2", "eth_blockNumber")}]`);
    },
  },
  {
    name: "POSITIVE CONTROL (reaches upstream): a call with spaces and the envelope's members only goes on as received",
    label: "eth",
    path: `/${K}/`,
    body: ` { "params" : [ ] , "id": 7,\n"method": "eth_blockNumber", "jsonrpc": "2.0" } `,
    status: 200,
    upstream: 1,
    check: (_r, seen) => {
      expect(seen[0]?.body).toBe(
        ` { "params" : [ ] , "id": 7,\n"method": "eth_blockNumber", "jsonrpc": "2.0" } `,
      );
    },
  },
  {
    name: "POSITIVE CONTROL (reaches upstream): a batch with spaces and the envelope's members only goes on as received",
    label: "eth",
    path: `/${K}/`,
    body: `[ ${call("1", "eth_blockNumber")} ,\n { "id": 2, "jsonrpc": "2.0", "method": "eth_chainId" } ]`,
    status: 200,
    upstream: 1,
    check: (_r, seen) => {
      expect(seen[0]?.body).toBe(
        `[ ${call("1", "eth_blockNumber")} ,\n { "id": 2, "jsonrpc": "2.0", "method": "eth_chainId" } ]`,
      );
    },
  },
  {
    name: "POSITIVE CONTROL (reaches upstream): an extra member is dropped from a single call",
    label: "eth",
    path: `/${K}/`,
    body: `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[],"x":{"method":"admin_peers"}}`,
    status: 200,
    upstream: 1,
    check: (_r, seen) => {
      expect(seen[0]?.body).toBe(call("1", "eth_blockNumber"));
    },
  },
  {
    name: "POSITIVE CONTROL (reaches upstream): an escaped method goes on written out as the one that was checked",
    label: "eth",
    path: `/${K}/`,
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_\\u0062lockNumber","params":[]}',
    status: 200,
    upstream: 1,
    check: (_r, seen) => {
      expect(seen[0]?.body).toBe(call("1", "eth_blockNumber"));
    },
  },
  {
    name: "POSITIVE CONTROL (reaches upstream): an escaped member name goes on written out plainly",
    label: "eth",
    path: `/${K}/`,
    body: '{"jsonrpc":"2.0","id":1,"\\u006dethod":"eth_blockNumber","params":[]}',
    status: 200,
    upstream: 1,
    check: (_r, seen) => {
      expect(seen[0]?.body).toBe(call("1", "eth_blockNumber"));
    },
  },
  {
    name: "POSITIVE CONTROL (reaches upstream): an escape in a parameter sends the call re-serialised, the parameter as written",
    label: "eth",
    path: `/${K}/`,
    body: '{ "jsonrpc":"2.0", "id":1, "method":"eth_call", "params":[{"data":"0x\\u0030"}, "latest"] }',
    status: 200,
    upstream: 1,
    check: (_r, seen) => {
      expect(seen[0]?.body).toBe(call("1", "eth_call", '[{"data":"0x\\u0030"}, "latest"]'));
    },
  },
  {
    name: "PARTIAL BATCH (reaches upstream with the allowed call only): one allowed, one denied",
    label: "eth",
    path: `/${K}/`,
    body: `[${call(BIG_ID, "eth_blockNumber")},${call(OBJECT_ID, "admin_addPeer", '["enode://x"]')}]`,
    status: 200,
    upstream: 1,
    check: (r, seen) => {
      expect(seen[0]?.body).toBe(`[${call(BIG_ID, "eth_blockNumber")}]`);
      const answers = JSON.parse(r.text) as { id: unknown }[];
      expect(answers).toHaveLength(2);
      expect(answers).toContainEqual({ jsonrpc: "2.0", id: expect.any(Number), result: "0x2a" });
      expect(answers).toContainEqual({
        jsonrpc: "2.0",
        id: expect.any(Object),
        error: expect.objectContaining({
          code: -32601,
          data: expect.objectContaining({ code: "METHOD_NOT_FOUND", method: "admin_addPeer" }),
        }),
      });
      expect(r.text).toContain(`{"jsonrpc":"2.0","id":${BIG_ID},"result":"0x2a"}`);
      expect(r.text).toContain(`"id":${OBJECT_ID},`);
    },
  },
  {
    name: "PARTIAL BATCH (reaches upstream with the notification only): the refusal is still answered",
    label: "eth",
    path: `/${K}/`,
    body: `[{"jsonrpc":"2.0","method":"eth_blockNumber","params":[]},${call("7", "admin_peers")}]`,
    status: 200,
    upstream: 1,
    check: (r, seen) => {
      expect(seen[0]?.body).toBe('[{"jsonrpc":"2.0","method":"eth_blockNumber","params":[]}]');
      expect(JSON.parse(r.text)).toEqual([
        expect.objectContaining({ id: 7, error: expect.objectContaining({ code: -32601 }) }),
      ]);
    },
  },
];

describe("bad input is refused with the documented error and never reaches the upstream", () => {
  let gw: RunningGateway;
  const nodes: Record<string, LoopbackNode> = {};
  const seen = () => Object.values(nodes).flatMap((n) => n.requests);

  beforeAll(async () => {
    const evm = jsonRpcResponder({
      eth_blockNumber: "0x2a",
      eth_call: "0x",
      debug_traceTransaction: { gas: 21000, failed: false },
    });
    const started = await Promise.all([
      startLoopbackNode(evm),
      startLoopbackNode(evm),
      startLoopbackNode(evm),
      startLoopbackNode(jsonRpcResponder({ status: { chain_id: "mainnet" } })),
      startLoopbackNode(jsonRpcResponder({ getblockcount: 800000 })),
      startLoopbackNode(restResponder({ "GET /version": { version: { major: 21 } } })),
    ]);
    const labels = ["eth", "bsc", "avax", "near", "btc", "xtz"];
    labels.forEach((label, i) => {
      nodes[label] = started[i] as LoopbackNode;
    });
    gw = await startGateway({
      upstreams: Object.fromEntries(labels.map((label) => [label, [(nodes[label] as LoopbackNode).url]])),
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(Object.values(nodes).map((n) => n.close()));
  });
  beforeEach(() => {
    for (const node of Object.values(nodes)) node.requests.length = 0;
  });

  for (const row of rows) {
    it(row.name, async () => {
      const logsBefore = gw.logs.length;
      const r = await send(gw, row);
      expect(r.status, r.text).toBe(row.status);
      if (row.error !== undefined) expectError(row.error, row.status, r);
      row.check?.(r, seen());
      // What reached the upstream: nothing for a refusal.
      expect(seen()).toHaveLength(row.upstream ?? 0);
      // No key is ever echoed back, and nothing the caller sent made the gateway fail inside.
      for (const key of ALL_KEYS) expect(r.text).not.toContain(key);
      const newLogs = gw.logs.slice(logsBefore).join("");
      expect(newLogs).not.toContain('"level":"error"');
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });
  }

  it("Expect: 100-continue on a request that passes its checks gets 100 Continue, then the node's answer", async () => {
    const body = rpcBody("eth_blockNumber");
    const answer = await new Promise<{ continued: boolean; status: number; text: string }>(
      (resolve, reject) => {
        let continued = false;
        const req = request({
          host: "127.0.0.1",
          port: gw.port,
          method: "POST",
          path: `/${K}/`,
          headers: {
            host: `eth.${DOMAIN}`,
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body),
            expect: "100-continue",
          },
        });
        req.on("continue", () => {
          continued = true;
          req.end(body);
        });
        req.on("response", (res) => {
          let text = "";
          res.on("data", (chunk) => {
            text += chunk;
          });
          res.on("end", () => resolve({ continued, status: res.statusCode ?? 0, text }));
        });
        req.on("error", reject);
      },
    );
    expect(answer).toMatchObject({ continued: true, status: 200 });
    expect(JSON.parse(answer.text)).toMatchObject({ id: 1, result: expect.any(String) });
    expect(seen()).toHaveLength(1);
  });

  // any other expectation got Node's bare 417: no body, no id, no access line
  it("an Expect other than 100-continue is served as if none were asked", async () => {
    const body = BLOCK_NUMBER;
    const r = await rawRequest(
      gw.port,
      `POST /${K}/ HTTP/1.1\r\nHost: eth.${DOMAIN}\r\nContent-Type: application/json\r\nExpect: 200-ok\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(r.status).toBe(200);
    expect(r.headers["x-request-id"]).toBeDefined();
    expect(JSON.parse(r.text)).toMatchObject({ result: "0x2a" });
  });

  it("after every row the process is not polluted and still relays a valid call", async () => {
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.hasOwn(Object.prototype, "polluted")).toBe(false);
    expect(typeof Object.prototype.hasOwnProperty).toBe("function");
    const r = await gw.call("eth", `/${K}/`, { body: call("99", "eth_blockNumber") });
    expect(r.status).toBe(200);
    expect(r.text).toBe('{"jsonrpc":"2.0","id":99,"result":"0x2a"}');
    expect(seen()).toHaveLength(1);
    expect(seen()[0]).toMatchObject({ method: "POST", url: "/", body: call("99", "eth_blockNumber") });
    expect(gw.logs.join("")).not.toContain('"level":"error"');
    for (const key of ALL_KEYS) expect(gw.logs.join("")).not.toContain(key);
  });
});

async function send(gw: RunningGateway, row: Row): Promise<Result> {
  if (row.raw !== undefined) return rawRequest(gw.port, row.raw);
  const { host } = row;
  return gw.call(row.label ?? "eth", row.path ?? "/", {
    ...(row.method === undefined ? {} : { method: row.method }),
    ...(row.body === undefined ? {} : { body: row.body }),
    ...(row.headers === undefined ? {} : { headers: row.headers }),
    ...(host === undefined ? {} : { host }),
  });
}

function expectError(expected: Expected, status: number, r: Result): void {
  if (expected.kind === "bodiless") {
    expect(r.text).toBe("");
    return;
  }
  expect(String(r.headers["content-type"])).toMatch(/^application\/json/);
  const json = JSON.parse(r.text) as Record<string, unknown>;
  if (expected.kind === "rest") {
    expect(Object.keys(json)).toEqual(["error"]);
    expect(json.error).toEqual(
      expect.objectContaining({
        code: expected.code,
        status,
        message: expect.any(String),
        ...expected.detail,
      }),
    );
    return;
  }
  expect(json).toEqual({
    jsonrpc: "2.0",
    id: JSON.parse(expected.id),
    error: {
      ...expected.causes,
      code: expected.rpc,
      message: expect.any(String),
      data: expect.objectContaining({ code: expected.code, ...expected.data }),
    },
  });
  // The id exactly as the caller wrote it, compared as text: parsing would lose digits.
  expect(r.text.includes(`"id":${expected.id},`) || r.text.includes(`"id":${expected.id}}`), r.text).toBe(
    true,
  );
}
