import { createServer, type Server } from "node:http";
import { endpointsByLabel } from "../generated/endpoints.js";
import type { GatewayConfig } from "./config/types.js";
import { parserRefusal } from "./errors/respond.js";
import type { KeyStore } from "./keys/types.js";
import type { RateLimiter } from "./limits/token-bucket.js";
import { createLogger, type Logger } from "./log.js";
import { HttpExchange } from "./pipeline/http.js";
import { Stages } from "./pipeline/stages.js";
import type { Endpoint } from "./registry/types.js";
import { poolPerOrigin } from "./upstream/policy.js";
import { Prober } from "./upstream/prober.js";
import { type DispatcherFactory, UpstreamTable } from "./upstream/upstreams.js";
import { WebSocketGateway } from "./ws/upgrade.js";

export interface GatewayOptions {
  readonly config: GatewayConfig;
  readonly keys: KeyStore;
  /** The routing table; the generated one unless a test brings its own registry. */
  readonly endpoints?: ReadonlyMap<string, Endpoint>;
  /** How upstream connections are made; tests may inject an undici MockAgent. */
  readonly dispatcherFactory?: DispatcherFactory;
  /** Stage 5's limiter; in-process token buckets unless given. */
  readonly limiter?: RateLimiter;
  readonly logger?: Logger;
}

export interface Gateway {
  readonly server: Server;
  readonly upstreams: UpstreamTable;
  /** Closes the WebSocket connections of a key that was just withdrawn. */
  closeConnectionsOf(keyId: string): void;
  close(): Promise<void>;
}

/**
 * The data plane: a node:http server and its WebSocket upgrades, both running the pipeline's stages
 * (pipeline/stages.ts) over the generated tables.
 */
export function createGateway(options: GatewayOptions): Gateway {
  const { config } = options;
  const { limits } = config;
  const logger = options.logger ?? createLogger(config.log.level);
  const endpoints = options.endpoints ?? endpointsByLabel;
  const upstreams = new UpstreamTable(
    config,
    endpoints,
    options.dispatcherFactory ?? poolPerOrigin,
    (group, upstream, from, to, reason) => {
      // Leaving rotation is what an operator must see; coming back is news.
      logger.log(to === "healthy" ? "info" : "warn", "upstream state", {
        label: group.label,
        mount: group.mount,
        upstream: upstream.name,
        from,
        to,
        reason,
      });
      if (to === "failing") websockets.upstreamFailed(upstream);
    },
  );
  const prober = new Prober(upstreams, endpoints, config.health);
  const stages = new Stages({
    config,
    endpoints,
    keys: options.keys,
    upstreams,
    ...(options.limiter === undefined ? {} : { limiter: options.limiter }),
  });
  const exchange = { limits, logger, logAccess: config.log.access };

  const server = createServer(
    {
      maxHeaderSize: limits.maxHeaderBytes,
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      connectionsCheckingInterval: limits.connectionsCheckingIntervalMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // Host is checked by stage 1, with a JSON error body, not by Node's bodiless 400.
      requireHostHeader: false,
    },
    (req, res) => new HttpExchange(req, res, stages, exchange).run(),
  );
  const websockets = new WebSocketGateway(config, stages, logger);
  server.on("upgrade", websockets.handleUpgrade);
  prober.start();
  // One more than the limit, so a request over it is seen and refused rather than silently truncated.
  server.maxHeadersCount = limits.maxHeaders + 1;
  server.timeout = limits.socketIdleTimeoutMs;
  server.on("clientError", (error: NodeJS.ErrnoException, socket) => {
    if (socket.writable) socket.end(parserRefusal(error.code));
  });

  return {
    server,
    upstreams,
    closeConnectionsOf: (keyId) => websockets.closeKey(keyId),
    async close() {
      prober.stop();
      websockets.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await upstreams.close();
    },
  };
}
