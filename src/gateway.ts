import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { endpointsByLabel } from "../generated/endpoints.js";
import { Admission } from "./admission.js";
import type { GatewayConfig } from "./config/types.js";
import { CallContext, dedicatedPointer } from "./context.js";
import { ANY_ORIGIN, type ErrorStyle, sendError } from "./errors/respond.js";
import { GatewayError } from "./errors/table.js";
import { collectBody } from "./http/body.js";
import { clientGone } from "./http/client-gone.js";
import type { RequestTarget } from "./http/target.js";
import { handleJsonRpc } from "./jsonrpc/handle.js";
import type { KeyStore } from "./keys/types.js";
import { AccessLine, createLogger, type Logger } from "./log.js";
import type { Endpoint, JsonRpcPolicy, Mount, RouteNode } from "./registry/types.js";
import { handleRest } from "./rest/handle.js";
import { type DispatcherFactory, UpstreamTable } from "./upstream/upstreams.js";
import { WebSocketGateway } from "./ws/upgrade.js";

export interface GatewayOptions {
  readonly config: GatewayConfig;
  readonly keys: KeyStore;
  /** The routing table; the generated one unless a test brings its own registry. */
  readonly endpoints?: ReadonlyMap<string, Endpoint>;
  /** How upstream connections are made; tests may inject an undici MockAgent. */
  readonly dispatcherFactory?: DispatcherFactory;
  readonly logger?: Logger;
}

export interface Gateway {
  readonly server: Server;
  readonly upstreams: UpstreamTable;
  /** Closes the WebSocket connections of a key that was just withdrawn. */
  closeConnectionsOf(keyId: string): void;
  close(): Promise<void>;
}

/** The HTTP data plane: a node:http server whose every decision comes from the generated tables. */
export function createGateway(options: GatewayOptions): Gateway {
  const { config, keys } = options;
  const { limits } = config;
  const endpoints = options.endpoints ?? endpointsByLabel;
  const logger = options.logger ?? createLogger(config.log.level);
  const admission = new Admission(config, keys, endpoints);
  const upstreams = new UpstreamTable(config, options.dispatcherFactory);

  const server = createServer(
    {
      maxHeaderSize: limits.maxHeaderBytes,
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      connectionsCheckingInterval: limits.connectionsCheckingIntervalMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // Host is checked here, with a JSON error body, not by Node's bodiless 400.
      requireHostHeader: false,
    },
    handle,
  );
  const websockets = new WebSocketGateway(config, admission, upstreams, logger);
  server.on("upgrade", websockets.handleUpgrade);
  // One more than the limit, so a request over it is seen and refused rather than silently truncated.
  server.maxHeadersCount = limits.maxHeaders + 1;
  server.timeout = limits.socketIdleTimeoutMs;
  server.on("clientError", (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return;
    const status =
      error.code === "HPE_HEADER_OVERFLOW" ? 431 : error.code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : 400;
    socket.end(
      `HTTP/1.1 ${status} ${status === 431 ? "Request Header Fields Too Large" : status === 408 ? "Request Timeout" : "Bad Request"}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`,
    );
  });

  const services = { admission, upstreams, config };

  /**
   * One request, from Host to access-log line. Callbacks rather than an async function per layer: each
   * await and promise showed in the profile of this path (bench/README.md).
   */
  function handle(req: IncomingMessage, res: ServerResponse): void {
    const started = performance.now();
    const access = new AccessLine();
    let style: ErrorStyle = "rest";
    let call: CallContext | undefined;
    let finished = false;

    // Ends the request once, whichever way it ends. A second call can only be a throw after a handler
    // called back: the answer is settled by then, so a bug's error is logged and nothing else is done.
    const finish = (error?: unknown): void => {
      if (finished) {
        if (error !== undefined && !(error instanceof GatewayError)) unhandled(error);
        return;
      }
      finished = true;
      if (error !== undefined) fail(error);
      if (!config.log.access) return;
      access.status = res.headersSent ? res.statusCode : 499;
      access.ms = Math.round(performance.now() - started);
      logger.log("info", "request", access);
    };
    const fail = (error: unknown): void => {
      if (!(error instanceof GatewayError)) {
        unhandled(error);
        access.error = "INTERNAL";
        if (!res.headersSent) sendError(res, new GatewayError("INTERNAL"), "rest");
        else res.destroy();
        return;
      }
      // Once the status line is out the relay has told a client that left from a connection it cut itself.
      const closed = error.code === "CLIENT_CLOSED" || (!res.headersSent && clientGone(res));
      access.error = closed ? "CLIENT_CLOSED" : error.code;
      if (!closed) sendError(res, error, style, error.rawId ?? call?.replyId);
    };

    try {
      const { endpoint, publicHost } = admission.endpoint(req);
      access.label = endpoint.label;
      style = endpoint.family === "rest" ? "rest" : "jsonrpc";
      if (req.method === "OPTIONS") {
        preflight(res);
        finish();
        return;
      }
      const admitted = admission.admit(req, endpoint, publicHost);
      if (admitted.principal !== undefined) access.key = admitted.principal.keyId;
      const mount = mountFor(endpoint, admitted.target.path);
      style = mount.policy.family;
      checkDedicatedOnly(endpoint, admitted.target);
      call = new CallContext(req, res, mount, admitted, services, access);
      const ctx = call;
      const segments = belowMount(mount, admitted.target);
      const rpc = jsonRpcAt(ctx, segments);
      if (rpc === undefined) {
        handleRest(ctx, routesOf(mount), segments, finish);
        return;
      }
      collectBody(req, limits.maxBodyBytes, (error, body) => {
        if (error !== undefined) return finish(error);
        try {
          handleJsonRpc(ctx, rpc, body, finish);
        } catch (thrown) {
          finish(thrown);
        }
      });
    } catch (error) {
      finish(error);
    }
  }

  function unhandled(error: unknown): void {
    logger.log("error", "unhandled", { error: String(error) });
  }

  function checkDedicatedOnly(endpoint: Endpoint, target: RequestTarget): void {
    for (const iface of endpoint.dedicatedOnly) {
      if (iface.paths.some((p) => target.path === p || target.path.startsWith(`${p}/`))) {
        throw new GatewayError("DEDICATED_ONLY_INTERFACE", {
          interface: iface.name,
          ...dedicatedPointer(config.support),
        });
      }
    }
  }

  return {
    server,
    upstreams,
    closeConnectionsOf: (keyId) => websockets.closeKey(keyId),
    async close() {
      websockets.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await upstreams.close();
    },
  };
}

function preflight(res: ServerResponse): void {
  res.writeHead(204, {
    ...ANY_ORIGIN,
    "access-control-allow-methods": "GET, POST",
    "access-control-allow-headers": "content-type, accept",
    "access-control-max-age": "86400",
  });
  res.end();
}

/** The mount's JSON-RPC policy when the request is a POST to the mount's root; undefined for REST. */
function jsonRpcAt(ctx: CallContext, segments: readonly string[]): JsonRpcPolicy | undefined {
  const rpc = ctx.mount.policy.jsonrpc;
  if (rpc === undefined || segments.length > 0) return undefined;
  if (ctx.req.method !== "POST")
    throw new GatewayError("HTTP_METHOD_NOT_ALLOWED", { allow: ["POST"] }, { allow: "POST" });
  return rpc;
}

/** The target's path segments below the mount. */
function belowMount(mount: Mount, target: RequestTarget): readonly string[] {
  const depth = mount.path === "/" ? 0 : mount.path.split("/").length - 1;
  return depth === 0 ? target.segments : target.segments.slice(depth);
}

function routesOf(mount: Mount): RouteNode {
  if (mount.policy.routes === undefined) throw new GatewayError("NOT_FOUND");
  return mount.policy.routes;
}

/** Mounts are ordered longest first; "/" takes whatever the others do not. */
function mountFor(endpoint: Endpoint, path: string): Mount {
  for (const mount of endpoint.mounts) {
    if (mount.path === "/" || path === mount.path || path.startsWith(`${mount.path}/`)) return mount;
  }
  throw new GatewayError("NOT_FOUND");
}
