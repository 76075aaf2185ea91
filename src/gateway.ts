import { createServer, type Server } from "node:http";
import { endpointsByLabel } from "../generated/endpoints.js";
import type { GatewayConfig } from "./config/types.js";
import { parserRefusal } from "./errors/respond.js";
import { buildPlane, carryCordons, type Plane, type PlaneParts } from "./gateway-plane.js";
import type { KeyStore } from "./keys/types.js";
import type { UsageRecorder } from "./keys/usage.js";
import { type RateLimiter, TokenBuckets } from "./limits/token-bucket.js";
import { createLogger, type Logger } from "./log.js";
import { GatewayMetrics } from "./metrics/gateway-metrics.js";
import { HttpExchange } from "./pipeline/http.js";
import type { Endpoint } from "./registry/types.js";
import { poolPerOrigin } from "./upstream/policy.js";
import type { DispatcherFactory, UpstreamTable } from "./upstream/upstreams.js";

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

/** The upstreams the gateway serves new requests with: the current config's. */
export type UpstreamView = Pick<UpstreamTable, "group" | "groups">;

export interface Gateway {
  readonly server: Server;
  readonly upstreams: UpstreamView;
  /** The data plane's series; undefined with `metrics.enabled: false`. */
  readonly metrics: GatewayMetrics | undefined;
  /** Closes the WebSocket connections of a key that was just withdrawn. */
  closeConnectionsOf(keyId: string): void;
  /**
   * Serves new requests and WebSocket connections with `config` and `keys` (SIGHUP): upstreams, health,
   * limits, static keys. What is in flight finishes on the config it began with. The listener, its
   * timeouts and the metrics setting stay as they started.
   */
  reload(config: GatewayConfig, keys: KeyStore): void;
  close(): Promise<void>;
}

/**
 * The data plane: a node:http server and its WebSocket upgrades, both running the pipeline's stages
 * (pipeline/stages.ts) over the generated tables, with the current plane (gateway-plane.ts).
 */
export function createGateway(options: GatewayOptions): Gateway {
  const { config } = options;
  const { limits } = config;
  const logger = options.logger ?? createLogger(config.log.level);
  const parts = (config: GatewayConfig, keys: KeyStore): PlaneParts => ({
    config,
    keys,
    endpoints: options.endpoints ?? endpointsByLabel,
    dispatcherFactory: options.dispatcherFactory ?? poolPerOrigin,
    limiter,
    usage: options.usage,
    metrics,
    logger,
  });
  // One limiter for every plane: a reload does not refill anyone's bucket.
  const limiter = options.limiter ?? new TokenBuckets();
  /** Every plane that may still hold work: the current one, and retired ones until they are done. */
  const planes = new Set<Plane>();
  const upstreams: UpstreamView = {
    group: (label, mount) => current.upstreams.group(label, mount),
    groups: () => current.upstreams.groups(),
  };
  // The gauges are read at scrape time: upstreams from the current plane, WebSockets from every plane.
  const metrics: GatewayMetrics | undefined = config.metrics.enabled
    ? new GatewayMetrics(upstreams, {
        connections: () => summed((p) => p.websockets.connections()),
        subscriptions: () => summed((p) => p.websockets.subscriptions()),
      })
    : undefined;
  let current: Plane = buildPlane(parts(config, options.keys));
  planes.add(current);

  const summed = (read: (plane: Plane) => Map<string, number>) => {
    const total = new Map<string, number>();
    for (const plane of planes)
      for (const [label, n] of read(plane)) total.set(label, (total.get(label) ?? 0) + n);
    return total;
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
    (req, res) => new HttpExchange(req, res, current.stages, current.exchange).run(),
  );
  server.on("upgrade", (req, socket, head) => current.websockets.handleUpgrade(req, socket, head));
  // One more than the limit, so a request over it is seen and refused rather than silently truncated.
  server.maxHeadersCount = limits.maxHeaders + 1;
  server.timeout = limits.socketIdleTimeoutMs;
  server.on("clientError", (error: NodeJS.ErrnoException, socket) => {
    if (socket.writable) socket.end(parserRefusal(error.code));
  });

  /** A retired plane's upstream pools close once its requests are done; its WebSockets run on. */
  const retire = async (plane: Plane) => {
    plane.retire();
    await drained([plane], plane.config.limits.drainTimeoutMs);
    await plane.upstreams.close();
    if (sum(plane.websockets.connections()) === 0) planes.delete(plane);
  };

  return {
    server,
    upstreams,
    metrics,
    closeConnectionsOf: (keyId) => {
      for (const plane of planes) plane.websockets.closeKey(keyId);
    },
    reload(config, keys) {
      const previous = current;
      current = buildPlane(parts(config, keys));
      carryCordons(previous.upstreams, current.upstreams);
      planes.add(current);
      for (const plane of planes)
        if (plane !== current && plane !== previous && sum(plane.websockets.connections()) === 0)
          planes.delete(plane);
      void retire(previous);
    },
    /**
     * Stops accepting, closes WebSockets with 1001 and idle keep-alive connections, lets requests in
     * flight finish for up to `limits.drainTimeoutMs`, then cuts what is left.
     */
    async close() {
      for (const plane of planes) {
        plane.retire();
        plane.websockets.close();
      }
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await drained([...planes], limits.drainTimeoutMs);
      server.closeAllConnections();
      await closed;
      await Promise.all([...planes].map((plane) => plane.upstreams.close()));
    },
  };
}

/** Waits until the planes' requests in flight are done, or `timeoutMs` passed. */
async function drained(planes: readonly Plane[], timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  const inFlight = () => planes.reduce((n, plane) => n + plane.exchange.inFlight.count, 0);
  while (inFlight() > 0 && performance.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 20));
}

function sum(counts: ReadonlyMap<string, number>): number {
  let total = 0;
  for (const n of counts.values()) total += n;
  return total;
}
