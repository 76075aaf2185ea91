import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { parseJsonRpcBody } from "../../src/jsonrpc/scan.js";

/** A request as the upstream node saw it: what the gateway really sent. */
export interface SeenRequest {
  readonly method: string;
  /** Path and query, exactly as received. */
  readonly url: string;
  readonly headers: IncomingMessage["headers"];
  readonly rawHeaders: readonly string[];
  readonly body: string;
}

export interface Reply {
  readonly status?: number;
  readonly headers?: Record<string, string>;
  /** A string is sent as is; anything else as JSON. */
  readonly body: unknown;
}

export type Responder = (request: SeenRequest) => Reply | undefined | Promise<Reply | undefined>;

export interface LoopbackNode {
  readonly url: string;
  readonly port: number;
  readonly requests: SeenRequest[];
  readonly server: Server;
  close(): Promise<void>;
}

/** Reads a request whole, as an upstream node sees it. */
export async function readSeen(req: IncomingMessage): Promise<SeenRequest> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return {
    method: req.method ?? "",
    url: req.url ?? "",
    headers: req.headers,
    rawHeaders: req.rawHeaders,
    body: Buffer.concat(chunks).toString("utf8"),
  };
}

/** A loopback upstream node that records every request and answers through `respond` (404 otherwise). */
export async function startLoopbackNode(respond: Responder): Promise<LoopbackNode> {
  const requests: SeenRequest[] = [];
  const server = createServer(async (req, res) => {
    const seen = await readSeen(req);
    requests.push(seen);
    const reply = await respond(seen);
    if (reply === undefined) {
      res.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}');
      return;
    }
    // a 204 has no body, and so no Content-Type unless the reply names one
    if (reply.status === 204) {
      res.writeHead(204, reply.headers).end();
      return;
    }
    const body = typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body);
    // a whole answer with its length, as node servers send one they hold whole (bitcoind's evhttp always;
    // Go's net/http, hyper, aiohttp below their buffers): writeHead before end would send it chunked
    res
      .writeHead(reply.status ?? 200, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
        ...reply.headers,
      })
      .end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export type RpcResult = unknown | ((params: unknown) => unknown);

/** `responder`, answering each request `ms` later: a node that takes its time, as a real one does. */
export function answeringAfter(ms: number, responder: Responder): Responder {
  return async (request) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return responder(request);
  };
}

/**
 * Answers JSON-RPC like a node: single calls and batches, the id echoed as the caller's own token (so a
 * large integer keeps its digits), -32601 for a method it does not know.
 */
export function jsonRpcResponder(
  results: Record<string, RpcResult>,
  options: { path?: string } = {},
): Responder {
  return (request) => {
    if (request.method !== "POST" || (options.path !== undefined && request.url !== options.path))
      return undefined;
    const parsed = parseJsonRpcBody(request.body, 1000);
    // JSON-RPC 2.0 §4.1/§6, as geth does over HTTP: a notification is not answered, and a batch of
    // notifications only gets an empty body.
    const answers = parsed.calls.flatMap((call) => {
      const { method, params } = call.value as { method: string; params?: unknown };
      const id = call.members.get("id");
      if (id === undefined) return [];
      if (!Object.hasOwn(results, method)) {
        return `{"jsonrpc":"2.0","id":${id},"error":{"code":-32601,"message":"the method ${method} does not exist/is not available"}}`;
      }
      const result = results[method];
      const value = typeof result === "function" ? (result as (p: unknown) => unknown)(params) : result;
      return `{"jsonrpc":"2.0","id":${id},"result":${JSON.stringify(value)}}`;
    });
    if (answers.length === 0) return { body: "" };
    return { body: parsed.batch ? `[${answers.join(",")}]` : (answers[0] as string) };
  };
}

/** Answers REST calls from a `"METHOD /path"` table (query strings ignored for matching). */
export function restResponder(
  routes: Record<string, unknown | ((request: SeenRequest) => unknown)>,
): Responder {
  return (request) => {
    const path = request.url.split("?")[0] ?? "";
    const key = `${request.method} ${path}`;
    if (!Object.hasOwn(routes, key)) return undefined;
    const route = routes[key];
    return { body: typeof route === "function" ? (route as (r: SeenRequest) => unknown)(request) : route };
  };
}

/** Tries each responder in turn. */
export function firstOf(...responders: Responder[]): Responder {
  return async (request) => {
    for (const responder of responders) {
      const reply = await responder(request);
      if (reply !== undefined) return reply;
    }
    return undefined;
  };
}
