import type { Reply, Responder, SeenRequest } from "./loopback-node.js";

// What a loopback node's software is made of: a JSON-RPC server written the way that software writes its
// answers and errors, REST routes, and the guard it keeps (a password, an API token). test/support/
// sdk-nodes.ts fills these in for each interface of the registry.

export interface RpcServer {
  readonly path: string;
  readonly methods: Methods;
  readonly shape: RpcShape;
}

export interface Software {
  readonly rpc?: RpcServer;
  readonly rest?: Responder;
  /** A refusal for a request the server does not let in (no credential); undefined lets it in. */
  readonly guard?: (request: SeenRequest) => Reply | undefined;
  /** Where the server answers, which the operator writes in the upstream URL. */
  readonly basePath?: string;
  /** `user:password` the server demands (HTTP basic auth). */
  readonly credentials?: string;
  /** Headers the server demands, which the operator writes in the upstream entry. */
  readonly headers?: Record<string, string>;
}

export type Methods = Record<string, (params: unknown) => unknown>;

export interface Call {
  readonly jsonrpc?: string;
  readonly id?: unknown;
  readonly method: string;
  readonly params?: unknown;
}

/** How a JSON-RPC server writes its answers: `answer` a result and `refuse` an error, as the software does. */
export interface RpcShape {
  readonly answer: (call: Call, result: unknown) => unknown;
  readonly refuse: (call: Call, code: number, message: string) => { status: number; body: unknown };
  /** Whether it answers a batch, call by call. */
  readonly batch: boolean;
  /** Whether `params` is acceptable to the server (Ogmios takes an object or nothing). */
  readonly params?: (params: unknown) => boolean;
}

export function jsonRpcServer(path: string, methods: Methods, shape: RpcShape): Responder {
  const one = (call: Call): { status: number; body: unknown } => {
    if (!Object.hasOwn(methods, call.method))
      return shape.refuse(call, -32601, `Method not found: ${call.method}`);
    if (shape.params !== undefined && !shape.params(call.params))
      return shape.refuse(call, -32602, "Invalid params");
    return { status: 200, body: shape.answer(call, (methods[call.method] as Methods[string])(call.params)) };
  };
  return (request) => {
    if (request.method !== "POST" || request.url.split("?")[0] !== path) return undefined;
    const parsed = JSON.parse(request.body) as Call | Call[];
    if (!Array.isArray(parsed)) return one(parsed);
    if (!shape.batch) return { status: 400, body: { error: "batches are not served" } };
    return { body: parsed.map((call) => one(call).body) };
  };
}

/** go-ethereum, Substrate, nearcore, Pathfinder, CKB, jrpc2 (Stellar RPC), zq2: plain JSON-RPC 2.0. */
export const JSON_RPC_2: RpcShape = {
  answer: (call, result) => ({ jsonrpc: "2.0", id: call.id, result }),
  refuse: (call, code, message) => ({
    status: 200,
    body: { jsonrpc: "2.0", id: call.id, error: { code, message } },
  }),
  batch: true,
};

export function jsonRpc2(path: string, methods: Methods): RpcServer {
  return { path, methods, shape: JSON_RPC_2 };
}

/** REST routes as `"METHOD /path"` (query ignored); anything else is the server's own 404. */
export function restServer(routes: Record<string, () => unknown>, notFound: unknown): Responder {
  return (request) => {
    const route = routes[`${request.method} ${request.url.split("?")[0]}`];
    return route === undefined ? { status: 404, body: notFound } : { body: route() };
  };
}
