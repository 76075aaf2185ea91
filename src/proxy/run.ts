import cluster from "node:cluster";
import type { Server } from "node:http";
import { setTimeout as delay } from "node:timers/promises";
import { withRestartOnlyOf } from "../config/restart-only.js";
import type { GatewayConfig } from "../config/types.js";
import type { CachedKeyStore } from "../keys/key-cache.js";
import { changedStaticKeys } from "../keys/static-store.js";
import { LISTENERS, listen } from "../lifecycle.js";
import type { SharedTokenBuckets } from "../limits/shared-buckets.js";
import type { Logger } from "../log.js";
import { processRegistry } from "../metrics/registry.js";
import { quotaNotices } from "../plans/quota-notices.js";
import type { SharedQuotaLedger } from "../plans/shared-quotas.js";
import { startTracing } from "../tracing/start.js";
import { runCluster } from "./cluster.js";
import { WorkerConnectionCounts } from "./cluster-connections.js";
import { openKeyStores, type ProxyKeys } from "./key-stores.js";
import { closeServer, listenOperator } from "./listeners.js";
import { createOperatorApi, localView, reportOf } from "./operator.js";
import { Readiness } from "./readiness.js";
import { createProxyServer, type ProxyServer } from "./server.js";
import { openSharedState } from "./shared-state.js";
import { answerPrimary } from "./worker-link.js";

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

/**
 * Runs the proxy on `config.listen`: in this process, or as `config.workers` node:cluster workers that
 * share the listening socket. A worker runs the entry point its primary ran, which calls this again with the config its primary
 * handed it (worker-link.ts configFromPrimary). The
 * operator API runs once: in this process, or in the primary, which asks the workers.
 */
export function runProxy(config: GatewayConfig, logger: Logger): Promise<RunningProxy> {
  if (cluster.isPrimary && config.workers > 1) return runCluster(config, logger);
  return serveHere(config, logger);
}

async function serveHere(config: GatewayConfig, logger: Logger): Promise<RunningProxy> {
  const keys = await openKeyStores(config, logger);
  // Rates, quotas (docs/plans.md), heads and final answers in Redis for every instance, or this process's
  // own. A start does not wait long for Redis: until it answers, limits are local (docs/deployment.md).
  const shared = await openSharedState(config, logger, quotaNotices(keys.notices, logger), 2_000, keys.spent);
  const { limiter, quotas, heads, handles, answers: sharedAnswers } = shared;
  const tracing = await startTracing(config.tracing, logger);
  // a worker's WebSocket connections are counted by its primary: the caps hold for the instance
  const connections = cluster.isWorker ? new WorkerConnectionCounts() : undefined;
  const gateway = createProxyServer({
    config,
    keys: keys.store,
    logger,
    quotas,
    ...(tracing === undefined ? {} : { tracing }),
    ...(keys.usage === undefined ? {} : { usage: keys.usage }),
    ...(limiter === undefined ? {} : { limiter }),
    ...(heads === undefined ? {} : { heads }),
    ...(handles === undefined ? {} : { handles }),
    ...(sharedAnswers === undefined ? {} : { sharedAnswers }),
    ...(connections === undefined ? {} : { connections }),
  });
  keys.accounts?.onWithdrawn((keyId) => gateway.closeConnectionsOf(keyId));
  watchDependencies(gateway, keys, limiter, shared.sharedQuotas);
  const registry = processRegistry(gateway.metrics);
  const readiness = new Readiness(gateway.upstreams);
  let operator: Server | undefined;
  /** The config served: its `shutdownDelayMs` is the one a stop waits. */
  let serving = config;
  const reload = (file: GatewayConfig) => {
    // the settings that take a restart stay as the process runs them, in every part of it
    const next = withRestartOnlyOf(config, file);
    gateway.reload(next, keys.storeFor(next));
    for (const keyId of changedStaticKeys(serving, next)) gateway.closeConnectionsOf(keyId);
    serving = next;
  };
  /** When it went not ready: a cluster's primary says so first, and waits the shutdown delay itself. */
  let notReadySince: number | undefined;
  if (cluster.isWorker)
    answerPrimary({
      upstreams: () => reportOf(gateway.upstreams),
      ready: () => readiness.report(),
      metrics: () => registry.getMetricsAsJSON(),
      cordon: (request) => gateway.cordon(request),
      reload,
      stopping: (since) => {
        notReadySince ??= performance.now() - Math.max(0, Date.now() - since);
        readiness.stopping();
        gateway.stopping();
      },
    });
  else if (config.operator !== undefined)
    operator = createOperatorApi(
      localView(gateway.upstreams, (request) => gateway.cordon(request), registry, readiness),
      logger,
    );
  let operatorPort: number | undefined;
  let port: number;
  try {
    // The operator's listener first: a proxy that cannot be watched does not start taking traffic.
    operatorPort = await listenOperator(operator, config);
    port = await listen(gateway.server, config.listen.port, config.listen.host, LISTENERS.proxy);
    readiness.listening();
  } catch (error) {
    await Promise.all([closeServer(operator), gateway.close()]);
    await Promise.all([keys.close(), shared.close()]);
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
      gateway.stopping();
      // the delay counts from the moment it went not ready: a worker's primary already waited it out
      const waited = notReadySince === undefined ? 0 : performance.now() - notReadySince;
      await delay(Math.max(0, serving.limits.shutdownDelayMs - waited));
      await gateway.close();
      connections?.close();
      await closeServer(operator);
      await Promise.all([keys.close(), shared.close()]);
    },
  };
}

/** What the proxy serves without while it is away, in gateway_dependency_up; the logs say when it changes. */
function watchDependencies(
  gateway: ProxyServer,
  keys: ProxyKeys,
  limiter: SharedTokenBuckets | undefined,
  quotas: SharedQuotaLedger | undefined,
): void {
  const { metrics } = gateway;
  if (metrics === undefined) return;
  const accounts = keys.accounts;
  if (accounts !== undefined) metrics.dependencies.set("account_store", () => accounts.reachable);
  if (limiter !== undefined) {
    // rates and quotas both: either counted alone is an instance deciding alone
    metrics.dependencies.set("shared_limits", () => limiter.shared && (quotas?.shared ?? true));
    metrics.leases = () => limiter.leases;
  }
}
