import { createServer, type Server } from "node:http";
import { endpointsByLabel } from "../generated/endpoints.js";
import type { GatewayConfig } from "./config/types.js";
import { parserRefusal } from "./errors/respond.js";
import type { KeyStore } from "./keys/types.js";
import type { UsageRecorder } from "./keys/usage.js";
import type { RateLimiter } from "./limits/token-bucket.js";
import { createLogger, type Logger } from "./log.js";
import { GatewayMetrics } from "./metrics/gateway-metrics.js";
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
  /** Where keyed calls are counted per day (keys/usage.ts); none unless given. */
  readonly usage?: UsageRecorder;
  readonly logger?: Logger;
}

export interface Gateway {
  readonly server: Server;
  readonly upstreams: UpstreamTable;
  /** The data plane's series; undefined with `metrics.enabled: false`. */
  readonly metrics: GatewayMetrics | undefined;
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
  // The WebSocket gauges are read at scrape time, from the connections the WebSocket gateway holds.
  const metrics: GatewayMetrics | undefined = config.metrics.enabled
    ? new GatewayMetrics(upstreams, {
        connections: () => websockets.connections(),
        subscriptions: () => websockets.subscriptions(),
      })
    : undefined;
  const websockets: WebSocketGateway = new WebSocketGateway(config, stages, logger, {
    metrics,
    usage: options.usage,
  });
  const exchange = {
    limits,
    logger,
    logAccess: config.log.access,
    metrics,
    usage: options.usage,
    inFlight: { count: 0 },
  };

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
    metrics,
    closeConnectionsOf: (keyId) => websockets.closeKey(keyId),
    /**
     * Stops accepting, closes WebSockets with 1001 and idle keep-alive connections, lets requests in
     * flight finish for up to `limits.drainTimeoutMs`, then cuts what is left.
     */
    async close() {
      prober.stop();
      websockets.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const deadline = performance.now() + limits.drainTimeoutMs;
      while (exchange.inFlight.count > 0 && performance.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 20));
      server.closeAllConnections();
      await closed;
      await upstreams.close();
    },
  };
}
