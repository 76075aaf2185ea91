import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { endpointsByLabel } from "../generated/endpoints.js";
import { Admission } from "./admission.js";
import type { GatewayConfig } from "./config/types.js";
import type { CallContext } from "./context.js";
import { dedicatedPointer } from "./context.js";
import { ANY_ORIGIN, type ErrorStyle, sendError } from "./errors/respond.js";
import { GatewayError } from "./errors/table.js";
import { readBody } from "./http/body.js";
import { ClientGone } from "./http/client-gone.js";
import type { RequestTarget } from "./http/target.js";
import { handleJsonRpc } from "./jsonrpc/handle.js";
import type { KeyStore } from "./keys/types.js";
import { createLogger, type Logger } from "./log.js";
import type { Endpoint, Mount } from "./registry/types.js";
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
    (req, res) => {
      handle(req, res).catch((error: unknown) => {
        logger.log("error", "unhandled", { error: String(error) });
        if (!res.headersSent) sendError(res, new GatewayError("INTERNAL"), "rest");
        else res.destroy();
      });
    },
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

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const fields: Record<string, string | number> = {};
    let style: ErrorStyle = "rest";
    const gone = new ClientGone(res);
    try {
      const { endpoint, publicHost } = admission.endpoint(req);
      fields.label = endpoint.label;
      style = endpoint.family === "rest" ? "rest" : "jsonrpc";
      if (req.method === "OPTIONS") return preflight(res);
      const admitted = admission.admit(req, endpoint, publicHost);
      const { target, principal } = admitted;
      if (principal !== undefined) fields.key = principal.keyId;
      const mount = mountFor(endpoint, target.path);
      style = mount.policy.family;
      checkDedicatedOnly(endpoint, target);

      const ctx: CallContext = {
        req,
        res,
        endpoint,
        mount,
        target,
        principal,
        limits,
        support: config.support,
        signal: gone,
        charge(cost) {
          admission.charge(admitted, cost);
        },
        note(extra) {
          Object.assign(fields, extra);
        },
        upstreams() {
          const group = upstreams.group(endpoint.label, mount.path);
          if (group === undefined)
            throw new GatewayError("NO_UPSTREAM", { reason: "no upstream is configured for this endpoint" });
          return group;
        },
      };
      await dispatch(ctx);
    } catch (error) {
      if (!(error instanceof GatewayError)) throw error;
      const closed = gone.aborted || error.code === "CLIENT_CLOSED";
      fields.error = closed ? "CLIENT_CLOSED" : error.code;
      if (!closed) sendError(res, error, style, error.rawId);
    } finally {
      if (config.log.access) {
        logger.log("info", "request", {
          ...fields,
          status: res.headersSent ? res.statusCode : 499,
          ms: Math.round(performance.now() - started),
        });
      }
    }
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

  async function dispatch(ctx: CallContext): Promise<void> {
    const { mount, target, req } = ctx;
    const depth = mount.path === "/" ? 0 : mount.path.split("/").length - 1;
    const segments = target.segments.slice(depth);
    const rpc = mount.policy.jsonrpc;
    if (rpc !== undefined && segments.length === 0) {
      if (req.method !== "POST")
        throw new GatewayError("HTTP_METHOD_NOT_ALLOWED", { allow: ["POST"] }, { allow: "POST" });
      return handleJsonRpc(ctx, rpc, await readBody(req, limits.maxBodyBytes));
    }
    if (mount.policy.routes === undefined) throw new GatewayError("NOT_FOUND");
    return handleRest(ctx, mount.policy.routes, segments, () => readBody(req, limits.maxBodyBytes));
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

/** Mounts are ordered longest first; "/" takes whatever the others do not. */
function mountFor(endpoint: Endpoint, path: string): Mount {
  for (const mount of endpoint.mounts) {
    if (mount.path === "/" || path === mount.path || path.startsWith(`${mount.path}/`)) return mount;
  }
  throw new GatewayError("NOT_FOUND");
}
