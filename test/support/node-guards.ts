import type { Reply, SeenRequest } from "./loopback-node.js";

// The credentials node software demands before it answers, and how it refuses a request without one. A
// loopback node is set up with the credential below; the operator writes it in the upstream entry (in the
// URL for basic auth, as a header otherwise), and the gateway must send it on.

export interface Guard {
  /** HTTP basic auth's `user:password`, or a header and its value. */
  readonly credential: { readonly basicAuth: string } | { readonly header: string; readonly value: string };
  /** What the software answers a request without the credential. */
  readonly refusal: Reply;
}

/**
 * Bitcoin Core's rpcuser/rpcpassword (Dogecoin Core 1.14 has Bitcoin 0.14's code): without them, or with
 * wrong ones, a 401 with an empty body and `WWW-Authenticate: Basic realm="jsonrpc"` (bitcoin/bitcoin
 * src/httprpc.cpp, HTTPReq_JSONRPC and WWW_AUTH_HEADER_DATA, at dae0d13b).
 */
export const RPC_PASSWORD: Guard = {
  credential: { basicAuth: "rpcuser:rpcpassword" },
  refusal: { status: 401, headers: { "www-authenticate": 'Basic realm="jsonrpc"' }, body: "" },
};

/**
 * algod's API token (its algod.token file), on every route but the few common ones (/health, /genesis, …):
 * echo's HTTPError 401, which echo writes as {"message"} and a newline (algorand/go-algorand@dd6de88f
 * daemon/algod/api/server/lib/middlewares/auth.go and router.go).
 */
export const ALGOD_API_TOKEN: Guard = {
  credential: { header: "X-Algo-API-Token", value: "a".repeat(64) },
  refusal: { status: 401, body: '{"message":"Invalid API Token"}\n' },
};

/** Whether `request` carries the guard's credential. */
export function admits(guard: Guard, request: SeenRequest): boolean {
  const { credential } = guard;
  if ("basicAuth" in credential)
    return request.headers.authorization === `Basic ${Buffer.from(credential.basicAuth).toString("base64")}`;
  return request.headers[credential.header.toLowerCase()] === credential.value;
}
