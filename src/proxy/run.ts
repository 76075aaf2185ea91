import cluster from "node:cluster";
import type { GatewayConfig, LabelUpstreams } from "../config/types.js";
import { createGateway } from "../gateway.js";
import type { CachedKeyStore } from "../keys/key-cache.js";
import { listen } from "../lifecycle.js";
import type { Logger } from "../log.js";
import { openKeyStores } from "./key-stores.js";

export interface RunningProxy {
  readonly port: number;
  /** This process's cache of the account store; undefined when workers serve, or without a store. */
  readonly accountKeys: CachedKeyStore | undefined;
  close(): Promise<void>;
}

// The primary's upstreams, as its caller may have added to the config (the demo's local nodes).
const UPSTREAMS_VARIABLE = "GATEWAY_PRIMARY_UPSTREAMS";

/**
 * Runs the proxy on `config.listen`: in this process, or as `config.workers` node:cluster workers that
 * share the listening socket. A worker runs the entry point its primary ran, which calls this again.
 */
export function runProxy(config: GatewayConfig, logger: Logger): Promise<RunningProxy> {
  if (cluster.isPrimary && config.workers > 1) return forkWorkers(config, logger);
  return serveHere(cluster.isWorker ? withPrimaryUpstreams(config) : config, logger);
}

async function serveHere(config: GatewayConfig, logger: Logger): Promise<RunningProxy> {
  const keys = openKeyStores(config);
  const gateway = createGateway({ config, keys: keys.store, logger });
  keys.accounts?.onWithdrawn((keyId) => gateway.closeConnectionsOf(keyId));
  const port = await listen(gateway.server, config.listen.port, config.listen.host);
  return {
    port,
    accountKeys: keys.accounts,
    async close() {
      await gateway.close();
      keys.close();
    },
  };
}

/** Forks the workers and resolves once every one is listening. */
function forkWorkers(config: GatewayConfig, logger: Logger): Promise<RunningProxy> {
  return new Promise((resolve, reject) => {
    let listening = 0;
    cluster.on("listening", (_worker, address) => {
      listening += 1;
      if (listening === config.workers)
        resolve({ port: address.port, accountKeys: undefined, close: stopWorkers });
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

function withPrimaryUpstreams(config: GatewayConfig): GatewayConfig {
  const passed = process.env[UPSTREAMS_VARIABLE];
  if (passed === undefined) return config;
  return { ...config, upstreams: JSON.parse(passed) as Record<string, LabelUpstreams> };
}
