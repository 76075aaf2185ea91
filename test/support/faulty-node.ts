import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { type Responder, readSeen, type SeenRequest } from "./loopback-node.js";

/**
 * What a faulty node does with the next request:
 * - `none`: answers through its responder;
 * - `hang`: accepts the request, reads it, and never answers;
 * - `error`: answers 503;
 * - `reset`: reads the request, then resets the connection without a byte of answer.
 */
export type Fault = "none" | "hang" | "error" | "reset";

export interface FaultyNode {
  readonly url: string;
  readonly port: number;
  /** Every request it read, whatever it then did with it. */
  readonly requests: SeenRequest[];
  fault: Fault;
  /** How long it takes to answer, in ms: a slow node that is still healthy. */
  delayMs: number;
  /** Which requests `delayMs` slows (every one unless set): a test may slow callers and not probes. */
  slows: ((request: SeenRequest) => boolean) | undefined;
  /** The chain height its head answers report; tests move it to make the node lag or catch up. */
  height: number;
  /** Stops listening and cuts every connection: a dead node, refusing connections. */
  kill(): Promise<void>;
  /** Listens again on the same port, if it is not listening: the node restarted. */
  revive(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A loopback upstream node with fault knobs, for the health and failover suites. `respond` gets the
 * node's current height, so a head call reads whatever the test last set.
 */
export async function startFaultyNode(
  respond: (height: number) => Responder,
  options: { height?: number; port?: number } = {},
): Promise<FaultyNode> {
  const requests: SeenRequest[] = [];
  const sockets = new Set<Socket>();
  let server: Server;
  const node: FaultyNode = {
    url: "",
    port: 0,
    requests,
    fault: "none",
    delayMs: 0,
    slows: undefined,
    height: options.height ?? 1000,
    kill: () => stop(),
    revive: () => (server.listening ? Promise.resolve() : listen(node.port)),
    close: () => stop(),
  };

  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    const seen = await readSeen(req);
    requests.push(seen);
    const fault = node.fault;
    if (fault === "hang") return;
    if (fault === "reset") {
      req.socket.resetAndDestroy();
      return;
    }
    if (fault === "error") {
      res.writeHead(503, { "content-type": "application/json" }).end('{"error":"service unavailable"}');
      return;
    }
    if (node.delayMs > 0 && (node.slows === undefined || node.slows(seen)))
      await new Promise((resolve) => setTimeout(resolve, node.delayMs));
    const reply = await respond(node.height)(seen);
    if (reply === undefined) {
      res.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}');
      return;
    }
    const body = typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body);
    res.writeHead(reply.status ?? 200, { "content-type": "application/json", ...reply.headers }).end(body);
  };

  function listen(port: number): Promise<void> {
    server = createServer(handler);
    server.on("connection", (socket) => {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
    });
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        const actual = (server.address() as AddressInfo).port;
        Object.assign(node, { port: actual, url: `http://127.0.0.1:${actual}` });
        resolve();
      });
    });
  }

  function stop(): Promise<void> {
    return new Promise((resolve) => {
      if (!server.listening) return resolve();
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });
  }

  await listen(options.port ?? 0);
  return node;
}
