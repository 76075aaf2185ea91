import cluster, { type Worker } from "node:cluster";
import type { Server } from "node:http";
import { setTimeout as delay } from "node:timers/promises";
import type { GatewayConfig, LabelUpstreams } from "../config/types.js";
import { createGateway, type Gateway } from "../gateway.js";
import type { CachedKeyStore } from "../keys/key-cache.js";
import { LISTENERS, listen } from "../lifecycle.js";
import { SharedTokenBuckets } from "../limits/shared-buckets.js";
import type { Logger } from "../log.js";
import { clusterScraper, processRegistry } from "../metrics/registry.js";
import type { UpstreamTable } from "../upstream/upstreams.js";
import { openKeyStores, type ProxyKeys } from "./key-stores.js";
import {
  type CordonRequest,
  cordonIn,
  createOperatorApi,
  localView,
  type OperatorView,
  type ProcessReport,
  reportOf,
} from "./operator.js";
import { Readiness, type ReadyReport } from "./readiness.js";

export interface RunningProxy {
  readonly port: number;
  /** The operator API's port; undefined when the config has no operator listener. */
  readonly operatorPort: number | undefined;
  /** This process's cache of the account store; undefined when workers serve, or without a store. */
  readonly accountKeys: CachedKeyStore | undefined;
  /**
   * Serves new requests with `config` (SIGHUP): upstreams, health, limits and static keys. Requests and
   * WebSocket connections in flight finish on the old one. With workers, each worker is sent it.
   */
  reload(config: GatewayConfig): void;
  close(): Promise<void>;
}

// The primary's upstreams, as its caller may have added to the config (the demo's local nodes).
const UPSTREAMS_VARIABLE = "GATEWAY_PRIMARY_UPSTREAMS";

/**
 * Runs the proxy on `config.listen`: in this process, or as `config.workers` node:cluster workers that
 * share the listening socket. A worker runs the entry point its primary ran, which calls this again. The
 * operator API runs once: in this process, or in the primary, which asks the workers.
 */
export function runProxy(config: GatewayConfig, logger: Logger): Promise<RunningProxy> {
  if (cluster.isPrimary && config.workers > 1) return forkWorkers(config, logger);
  return serveHere(cluster.isWorker ? withPrimaryUpstreams(config) : config, logger);
}

async function serveHere(config: GatewayConfig, logger: Logger): Promise<RunningProxy> {
  const keys = await openKeyStores(config, logger);
  const limiter = config.sharedLimits && new SharedTokenBuckets(config.sharedLimits, logger);
  // A start does not wait long for Redis: until it answers, limits are local (docs/deployment.md).
  await limiter?.ready(2_000);
  const gateway = createGateway({
    config,
    keys: keys.store,
    logger,
    ...(keys.usage === undefined ? {} : { usage: keys.usage }),
    ...(limiter === undefined ? {} : { limiter }),
  });
  keys.accounts?.onWithdrawn((keyId) => gateway.closeConnectionsOf(keyId));
  watchDependencies(gateway, keys, limiter);
  const registry = processRegistry(gateway.metrics, cluster.isWorker);
  const readiness = new Readiness(gateway.upstreams);
  let operator: Server | undefined;
  const reload = (next: GatewayConfig) => gateway.reload(next, keys.storeFor(next));
  if (cluster.isWorker) answerPrimary(gateway.upstreams, readiness, reload);
  else if (config.operator !== undefined)
    operator = createOperatorApi(localView(gateway.upstreams, registry, readiness), logger);
  let operatorPort: number | undefined;
  let port: number;
  try {
    // The operator's listener first: a proxy that cannot be watched does not start taking traffic.
    operatorPort = await listenOperator(operator, config);
    port = await listen(gateway.server, config.listen.port, config.listen.host, LISTENERS.proxy);
    readiness.listening();
  } catch (error) {
    await Promise.all([closeServer(operator), gateway.close()]);
    await Promise.all([keys.close(), limiter?.close()]);
    throw error;
  }
  return {
    port,
    operatorPort,
    accountKeys: keys.accounts,
    reload,
    async close() {
      // Not ready first, while the operator's listener still answers: a balancer stops sending, then
      // the public listener closes.
      readiness.stopping();
      await delay(config.limits.shutdownDelayMs);
      await gateway.close();
      await closeServer(operator);
      await Promise.all([keys.close(), limiter?.close()]);
    },
  };
}

/** What the proxy serves without while it is away, in gateway_dependency_up; the logs say when it changes. */
function watchDependencies(gateway: Gateway, keys: ProxyKeys, limiter: SharedTokenBuckets | undefined): void {
  const { metrics } = gateway;
  if (metrics === undefined) return;
  const accounts = keys.accounts;
  if (accounts !== undefined) metrics.dependencies.set("account_store", () => accounts.reachable);
  if (limiter !== undefined) {
    metrics.dependencies.set("shared_limits", () => limiter.shared);
    metrics.leases = () => limiter.leases;
  }
}

/** Forks the workers and resolves once every one is listening; the operator API listens first. */
async function forkWorkers(config: GatewayConfig, logger: Logger): Promise<RunningProxy> {
  let stopping = false;
  const operator =
    config.operator &&
    createOperatorApi(
      workersView(() => stopping),
      logger,
    );
  const operatorPort = await listenOperator(operator, config);
  return new Promise((resolve, reject) => {
    let listening = 0;
    cluster.on("listening", (_worker, address) => {
      listening += 1;
      if (listening !== config.workers) return;
      resolve({
        port: address.port,
        operatorPort,
        accountKeys: undefined,
        reload: (next) => {
          for (const worker of Object.values(cluster.workers ?? {}))
            if (worker !== undefined && !worker.isDead())
              worker.send({ type: "gateway:reload", config: next });
        },
        close: async () => {
          stopping = true;
          await delay(config.limits.shutdownDelayMs);
          await stopWorkers();
          await closeServer(operator);
        },
      });
    });
    cluster.on("exit", (worker, code, signal) => {
      if (listening < config.workers)
        reject(new Error(`worker ${worker.id} exited during start (${code ?? signal})`));
      else logger.log("warn", "worker exited", { worker: worker.id, code: code ?? -1 });
    });
    const env = { [UPSTREAMS_VARIABLE]: JSON.stringify(config.upstreams) };
    for (let i = 0; i < config.workers; i++) cluster.fork(env);
  });
}

type ReloadMessage = { readonly type: "gateway:reload"; readonly config: GatewayConfig };
type OperatorMessage =
  | { readonly type: "gateway:upstreams" | "gateway:ready"; readonly id: number }
  | ({ readonly type: "gateway:cordon"; readonly id: number } & CordonRequest);

/** A worker answers its primary's operator API over the cluster's IPC channel, and takes its reloads. */
function answerPrimary(
  table: Pick<UpstreamTable, "groups">,
  readiness: Readiness,
  reload: (config: GatewayConfig) => void,
): void {
  process.on("message", (message: OperatorMessage | ReloadMessage) => {
    if (message?.type === "gateway:reload") return reload(message.config);
    if (message?.type === "gateway:upstreams") process.send?.({ id: message.id, value: reportOf(table) });
    else if (message?.type === "gateway:ready") process.send?.({ id: message.id, value: readiness.report() });
    else if (message?.type === "gateway:cordon")
      process.send?.({ id: message.id, value: cordonIn(table, message) });
  });
}

let nextMessage = 0;

/**
 * The primary's view: every worker asked. Each worker's upstreams are their own entry; its series are
 * summed with the others'; the cluster is ready when every worker is, and not while the primary stops.
 */
function workersView(stopping: () => boolean): OperatorView {
  const ask = <T>(worker: Worker, message: OperatorMessage): Promise<T> =>
    new Promise((resolve) => {
      const listener = (reply: { id?: number; value?: T }) => {
        if (reply?.id !== message.id) return;
        worker.off("message", listener);
        resolve(reply.value as T);
      };
      worker.on("message", listener);
      worker.send(message);
    });
  const workers = () =>
    Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());
  return {
    report: () =>
      Promise.all(
        workers().map((w) => ask<ProcessReport>(w, { type: "gateway:upstreams", id: ++nextMessage })),
      ),
    cordon: async (request) => {
      const counts = await Promise.all(
        workers().map((w) => ask<number>(w, { type: "gateway:cordon", id: ++nextMessage, ...request })),
      );
      return counts.reduce((a, b) => a + b, 0);
    },
    metrics: clusterScraper(),
    ready: async () => {
      const reports = await Promise.all(
        workers().map((w) => ask<ReadyReport>(w, { type: "gateway:ready", id: ++nextMessage })),
      );
      const reasons = new Set(reports.flatMap((r) => r.reasons));
      if (stopping()) reasons.add("shutting down");
      if (reports.length === 0) reasons.add("no worker is running");
      return { ready: reasons.size === 0, reasons: [...reasons] };
    },
  };
}

async function stopWorkers(): Promise<void> {
  const workers = Object.values(cluster.workers ?? {}).filter((w) => w !== undefined);
  await Promise.all(
    workers.map(
      (worker) =>
        new Promise<void>((resolve) => {
          if (worker.isDead()) return resolve();
          worker.once("exit", () => resolve());
          worker.kill("SIGTERM");
        }),
    ),
  );
}

/** The operator API on its listener, or undefined without one; a clash names the listener. */
async function listenOperator(
  operator: Server | undefined,
  config: GatewayConfig,
): Promise<number | undefined> {
  if (operator === undefined || config.operator === undefined) return undefined;
  const { host, port } = config.operator.listen;
  return listen(operator, port, host, LISTENERS.operator);
}

function closeServer(server: Server | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (server === undefined || !server.listening) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

function withPrimaryUpstreams(config: GatewayConfig): GatewayConfig {
  const passed = process.env[UPSTREAMS_VARIABLE];
  if (passed === undefined) return config;
  return { ...config, upstreams: JSON.parse(passed) as Record<string, LabelUpstreams> };
}
