import { createServer, type Server, type ServerResponse } from "node:http";
import { endpointsByLabel } from "../../generated/endpoints.js";
import type { SharedAnswers } from "../cache/shared-answers.js";
import type { GatewayConfig } from "../config/types.js";
import { parserRefusal } from "../errors/respond.js";
import { requestIdOf } from "../http/request-id.js";
import type { KeyStore } from "../keys/types.js";
import type { UsageRecorder } from "../keys/usage.js";
import { HeldCalls } from "../limits/held-calls.js";
import { type RateLimiter, TokenBuckets } from "../limits/token-bucket.js";
import { createLogger, type Logger } from "../log.js";
import { GatewayMetrics } from "../metrics/gateway-metrics.js";
import { HttpExchange } from "../pipeline/http.js";
import { PlanBook } from "../plans/plan-terms.js";
import { LocalQuotaLedger, type QuotaLedger } from "../plans/quota-ledger.js";
import type { Endpoint } from "../registry/types.js";
import type { Tracing } from "../tracing/tracing.js";
import { poolPerOrigin } from "../upstream/policy.js";
import type { DispatcherFactory, UpstreamTable } from "../upstream/upstreams.js";
import { type ConnectionCounts, LocalConnectionCounts } from "../ws/connection-counts.js";
import type { GroupShare } from "./cluster-shares.js";
import { type CordonRequest, cordonIn } from "./operator.js";
import {
  buildServedConfig,
  carryServedHeads,
  carryUpstreamState,
  cordonRemoved,
  operatorMayUncordon,
  type ServedConfig,
  type ServedConfigParts,
} from "./served-config.js";

export interface ProxyServerOptions {
  readonly config: GatewayConfig;
  readonly keys: KeyStore;
  /** The routing table; the generated one unless a test brings its own registry. */
  readonly endpoints?: ReadonlyMap<string, Endpoint>;
  /** How upstream connections are made; tests may inject an undici MockAgent. */
  readonly dispatcherFactory?: DispatcherFactory;
  /** Stage 5's limiter; in-process token buckets unless given. */
  readonly limiter?: RateLimiter;
  /** Stage 5's quota ledger (src/plans/); an in-process one unless given. */
  readonly quotas?: QuotaLedger;
  /** Where keyed calls are counted per day (keys/usage.ts); none unless given. */
  readonly usage?: UsageRecorder;
  /**
   * The labels' served heads, shared with other instances through Redis (src/answers/shared-heads.ts), or
   * with a cluster's other workers through its primary (cluster-shares.ts).
   */
  readonly heads?: GroupShare;
  /** The nodes of callers' filters, shared as the heads are (src/upstream/shared-handles.ts, cluster-shares.ts). */
  readonly handles?: GroupShare;
  /**
   * The open WebSocket connections per key and per IP; this process's own unless given: a worker's are
   * its primary's (cluster-connections.ts), so that the caps hold for the instance.
   */
  readonly connections?: ConnectionCounts;
  /** Final answers shared with other instances through Redis (src/cache/shared-answers.ts). */
  readonly sharedAnswers?: SharedAnswers;
  readonly logger?: Logger;
  /** The process's traces (tracing/start.ts), made from `config.tracing`; none with tracing off. */
  readonly tracing?: Tracing;
}

/** The upstreams the gateway serves new requests with: the current config's. */
export type UpstreamView = Pick<UpstreamTable, "group" | "groups"> & {
  /** The upstreams of configs a reload replaced that still hold work. */
  retired(): Iterable<Pick<UpstreamTable, "groups">>;
};

export interface ProxyServer {
  readonly server: Server;
  readonly upstreams: UpstreamView;
  /** The data plane's series; undefined with `metrics.enabled: false`. */
  readonly metrics: GatewayMetrics | undefined;
  /** Closes the WebSocket connections of a key that was just withdrawn. */
  closeConnectionsOf(keyId: string): void;
  /**
   * A stop has begun (`limits.shutdownDelayMs` before `close`): idle keep-alive connections are closed now,
   * while clients can still open new ones, and each answer from here on closes its connection
   * (`Connection: close`), so that none is left for the listener's close to cut under a client reusing it.
   */
  stopping(): void;
  /**
   * The operator's cordon (or uncordon) of an upstream, in the current config and in those a reload
   * replaced whose WebSockets live on: how many of the current config's upstreams it matched.
   */
  cordon(request: CordonRequest): number;
  /**
   * Serves new requests and WebSocket connections with `config` and `keys` (SIGHUP): upstreams, health,
   * limits, static keys. What is in flight finishes on the config it began with. The listener, its
   * timeouts and the metrics setting stay as they started.
   */
  reload(config: GatewayConfig, keys: KeyStore): void;
  close(): Promise<void>;
}

/**
 * The proxy's server: a node:http server and its WebSocket upgrades, both running the pipeline's stages
 * (pipeline/stages.ts) over the generated tables, with the current served config (served-config.ts): the
 * one it started with, or the last that a reload (SIGHUP) brought.
 */
export function createProxyServer(options: ProxyServerOptions): ProxyServer {
  const { config } = options;
  const { limits } = config;
  const logger = options.logger ?? createLogger(config.log.level);
  const parts = (config: GatewayConfig, keys: KeyStore): ServedConfigParts => ({
    config,
    keys,
    endpoints: options.endpoints ?? endpointsByLabel,
    dispatcherFactory: options.dispatcherFactory ?? poolPerOrigin,
    limiter,
    quotas,
    held,
    connections,
    usage: options.usage,
    heads: options.heads,
    handles: options.handles,
    sharedAnswers: options.sharedAnswers,
    metrics,
    tracing,
    logger,
  });
  // One limiter for every served config: a reload does not refill anyone's bucket.
  const limiter = options.limiter ?? new TokenBuckets();
  // and one quota ledger: a reload does not forget what a key spent
  const quotas = options.quotas ?? new LocalQuotaLedger();
  // and one count of each caller's held calls and WebSocket connections: a reload gives no one a second
  // allowance beside what it holds on the config it replaced
  const held = new HeldCalls(limits.maxHeldCallsPerCaller);
  const connections = options.connections ?? new LocalConnectionCounts();
  /** Every served config that may still hold work: the current one, and retired ones until they are done. */
  const servedConfigs = new Set<ServedConfig>();
  const upstreams: UpstreamView = {
    group: (label, mount) => current.upstreams.group(label, mount),
    groups: () => current.upstreams.groups(),
    retired: retiredUpstreams,
  };
  // The gauges are read at scrape time: upstreams from the current config, WebSockets from every one, and
  // the calls in flight and held from every one too (a long poll outlives the reload that retired its config).
  const metrics: GatewayMetrics | undefined = config.metrics.enabled
    ? new GatewayMetrics(upstreams, {
        connections: () => summed((p) => p.websockets.connections()),
        subscriptions: () => summed((p) => p.websockets.subscriptions()),
      })
    : undefined;
  // Like the metrics, the traces stay as the server started: a reload changes neither.
  const { tracing } = options;
  let current: ServedConfig = buildServedConfig(parts(config, options.keys));
  servedConfigs.add(current);

  function* retiredUpstreams() {
    for (const served of servedConfigs) if (served !== current) yield served.upstreams;
  }
  const summed = (read: (served: ServedConfig) => Map<string, number>) => {
    const total = new Map<string, number>();
    for (const served of servedConfigs)
      for (const [label, n] of read(served)) total.set(label, (total.get(label) ?? 0) + n);
    return total;
  };

  /** A stop has begun: answers close their connections (`stopping()` below). */
  let stopping = false;
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
    (req, res) => {
      if (stopping) res.shouldKeepAlive = false;
      new HttpExchange(req, res, current.stages, current.http).run();
    },
  );
  // Node answers `Expect: 100-continue` with 100 at once unless someone listens: the exchange sends it
  // once the request's head has passed its checks (http/body.ts), and a refusal is the only answer
  server.on("checkContinue", (req, res) => {
    if (stopping) res.shouldKeepAlive = false;
    new HttpExchange(req, res, current.stages, current.http).run();
  });
  // Any other expectation: Node's own answer would be a bare 417 with no id and no access line; the
  // gateway meets none, and serves the request as if none were asked (RFC 9110 10.1.1 lets a server do
  // either), as the nodes it relays to do
  server.on("checkExpectation", (req, res) => {
    if (stopping) res.shouldKeepAlive = false;
    new HttpExchange(req, res, current.stages, current.http).run();
  });
  server.on("upgrade", (req, socket, head) => current.websockets.handleUpgrade(req, socket, head));
  // One more than the limit, so a request over it is seen and refused rather than silently truncated.
  server.maxHeadersCount = limits.maxHeaders + 1;
  server.timeout = limits.socketIdleTimeoutMs;
  server.on("clientError", (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return;
    // a request timed out mid-body reached its exchange, whose access line names its id: the 408 does too
    const answer = (socket as typeof socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    socket.end(parserRefusal(error.code, answer?.headersSent === false ? requestIdOf(answer) : undefined));
  });

  /**
   * A retired config's WebSockets run on its nodes: its prober runs on, so that a node that hangs under
   * one is still seen and the connection moves, and its upstream pools stay open (a WebSocket bridged over
   * HTTP uses them), until its requests are done and its last connection has closed. Its requests are waited
   * for however long they take (`drainTimeoutMs` is a stop's deadline, not a reload's): a read moved to its
   * other node, or hedged, after a deadline would meet a closed pool. A stream or long poll keeps it only as
   * long as its caller holds it, as a WebSocket connection does; a stop cuts both.
   */
  const retire = async (served: ServedConfig) => {
    served.retire();
    await drained([served], Number.POSITIVE_INFINITY, 250);
    await served.websockets.whenIdle();
    served.stop();
    await served.upstreams.close();
    servedConfigs.delete(served);
  };

  return {
    server,
    upstreams,
    metrics,
    stopping() {
      if (stopping) return;
      stopping = true;
      // and again while the stop waits: a connection whose request was in flight as it began was told
      // keep-alive, and is closed once it is idle
      server.closeIdleConnections();
      const idle = setInterval(() => server.closeIdleConnections(), 100);
      idle.unref();
      server.once("close", () => clearInterval(idle));
    },
    closeConnectionsOf: (keyId) => {
      for (const served of servedConfigs) served.websockets.closeKey(keyId);
      held.cut(keyId);
    },
    cordon(request) {
      // an uncordon does not bring back a node a reload took out of the deployment
      for (const served of servedConfigs)
        if (served !== current)
          cordonIn(served.upstreams, request, (member) => request.cordoned || operatorMayUncordon(member));
      return cordonIn(current.upstreams, request);
    },
    reload(config, keys) {
      const previous = current;
      // the shared counts take the new limits (the WebSocket caps are read from the current config)
      held.max = config.limits.maxHeldCallsPerCaller;
      current = buildServedConfig(parts(config, keys));
      carryUpstreamState(previous.upstreams, current.upstreams);
      carryServedHeads(previous.upstreams, current.upstreams);
      servedConfigs.add(current);
      // the retired configs' connections were admitted on their plans' terms, which the new config may change
      const plans = new PlanBook(config.plans);
      for (const served of servedConfigs)
        if (served !== current) served.websockets.closeWherePlanChanged(plans);
      void retire(previous);
      // after it is retired, so that its logs do not call these an operator's cordons
      for (const served of servedConfigs)
        if (served !== current) cordonRemoved(served.upstreams, current.upstreams);
    },
    /**
     * Stops accepting, closes WebSockets with 1001 and idle keep-alive connections, lets requests in
     * flight finish for up to `limits.drainTimeoutMs`, then cuts what is left.
     */
    async close() {
      for (const served of servedConfigs) {
        served.retire();
        served.stop();
        served.websockets.close();
      }
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const { drainTimeoutMs } = current.config.limits;
      const left = await drained([...servedConfigs], drainTimeoutMs);
      if (left > 0) {
        // what the cut ends is the stop's doing, not its callers': logged as such, each and in all
        for (const served of servedConfigs) served.http.inFlight.cut = true;
        logger.log("warn", "drain deadline passed: cutting the requests in flight", {
          requests: left,
          drainTimeoutMs,
        });
      }
      server.closeAllConnections();
      await closed;
      await Promise.all([...servedConfigs].map((served) => served.upstreams.close()));
      // the spans of the last requests go to the collector before the process ends
      await tracing?.shutdown();
    },
  };
}

/**
 * Waits until the served configs' requests in flight are done, or `timeoutMs` passed, looking every
 * `everyMs`; how many are left.
 */
async function drained(
  servedConfigs: readonly ServedConfig[],
  timeoutMs: number,
  everyMs = 20,
): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  const inFlight = () => servedConfigs.reduce((n, served) => n + served.http.inFlight.count, 0);
  while (inFlight() > 0 && performance.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  return inFlight();
}
