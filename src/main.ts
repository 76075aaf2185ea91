// First: V8 settings must hold before the other modules run (v8-flags.ts).
import "./v8-flags.js";
import cluster from "node:cluster";
import type { Server } from "node:http";
import { endpointsByLabel, networkCodes } from "../generated/endpoints.js";
import { CachedKeyStore } from "./accounts/key-cache.js";
import { type Accounts, setUpAccounts } from "./accounts/setup.js";
import { SqliteAccountStore } from "./accounts/sqlite-store.js";
import { ConfigError, loadConfig } from "./config/load.js";
import type { GatewayConfig, LabelUpstreams } from "./config/types.js";
import { printDemo } from "./dev/demo.js";
import { type LocalNode, startLocalNodes } from "./dev/local-nodes.js";
import { createGateway, type Gateway } from "./gateway.js";
import { KeyStoreChain } from "./keys/chain.js";
import { newApiKey } from "./keys/issue.js";
import { StaticKeyStore } from "./keys/static-store.js";
import type { KeyStore } from "./keys/types.js";
import { createLogger, type Logger } from "./log.js";

/** What the primary hands each worker: the upstreams of the nodes it started, and a demo key. */
interface WorkerState {
  readonly upstreams: Record<string, LabelUpstreams>;
  readonly staticDemoKey?: string;
}

const STATE_VARIABLE = "GATEWAY_WORKER_STATE";

async function main(): Promise<void> {
  let config: GatewayConfig;
  try {
    config = loadConfig(endpointsByLabel);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`invalid configuration:\n${error.message}\n`);
    process.exit(2);
  }
  const logger = createLogger(config.log.level);
  if (cluster.isWorker) return runWorker(config, logger);

  // The primary owns what must exist once: local nodes, the account store's API, the demo key.
  const nodes: LocalNode[] = await startLocalNodes(config.localNodes, logger);
  // Nodes it started must not outlive a failed start.
  process.once("exit", () => {
    for (const node of nodes) node.kill();
  });
  const upstreams: Record<string, LabelUpstreams> = { ...config.upstreams };
  for (const node of nodes) upstreams[node.label] ??= [node.url];
  const accounts =
    config.accounts &&
    setUpAccounts({
      config: config.accounts,
      defaultRate: config.defaultRate,
      networks: new Set(networkCodes),
      trustedProxies: config.trustedProxies,
      logger,
    });
  const accountsPort =
    accounts &&
    (await listen(accounts.api, config.accounts?.listen.port ?? 0, config.accounts?.listen.host ?? ""));
  if (accountsPort !== undefined) logger.log("info", "accounts api listening", { port: accountsPort });
  const demo = config.demoKey ? issueDemoKey(accounts) : undefined;
  const state: WorkerState = { upstreams, ...(demo?.static ? { staticDemoKey: demo.key } : {}) };

  let gateway: Gateway | undefined;
  let port: number;
  if (config.workers > 1) {
    port = await forkWorkers(config.workers, state, logger);
  } else {
    gateway = createGateway({
      config: { ...config, upstreams },
      keys: keyStores(config, state, accounts?.keys),
      logger,
    });
    accounts?.keys.onWithdrawn((keyId) => gateway?.closeConnectionsOf(keyId));
    port = await listen(gateway.server, config.listen.port, config.listen.host);
  }
  logger.log("info", "gateway listening", {
    host: config.listen.host,
    port,
    domain: config.domain,
    workers: config.workers,
  });
  if (demo !== undefined)
    printDemo({ config, port, key: demo.key, nodes, accountsPort, endpoints: endpointsByLabel });

  onSignal(async () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.kill("SIGTERM");
    await gateway?.close();
    await accounts?.close();
    await Promise.all(nodes.map((n) => n.stop()));
  }, logger);
}

/** A worker serves the data plane on the shared socket, with its own cache following the account store. */
async function runWorker(config: GatewayConfig, logger: Logger): Promise<void> {
  const state = JSON.parse(process.env[STATE_VARIABLE] ?? "{}") as WorkerState;
  const store = config.accounts && new SqliteAccountStore(config.accounts.database);
  const cache = store && new CachedKeyStore(store, config.defaultRate);
  cache?.follow(config.accounts?.followIntervalMs ?? 500);
  const gateway = createGateway({
    config: { ...config, upstreams: state.upstreams },
    keys: keyStores(config, state, cache),
    logger,
  });
  cache?.onWithdrawn((keyId) => gateway.closeConnectionsOf(keyId));
  await listen(gateway.server, config.listen.port, config.listen.host);
  onSignal(async () => {
    await gateway.close();
    cache?.stop();
    store?.close();
  }, logger);
}

function keyStores(config: GatewayConfig, state: WorkerState, accounts: KeyStore | undefined): KeyStore {
  const keys =
    state.staticDemoKey === undefined
      ? config.keys
      : [...config.keys, { key: state.staticDemoKey, networks: "*" as const }];
  const stores: KeyStore[] = [new StaticKeyStore(keys, config.defaultRate)];
  if (accounts !== undefined) stores.push(accounts);
  return new KeyStoreChain(stores);
}

/** Forks the workers and resolves with the port they share once every one is listening. */
function forkWorkers(count: number, state: WorkerState, logger: Logger): Promise<number> {
  return new Promise((resolve, reject) => {
    let listening = 0;
    cluster.on("listening", (_worker, address) => {
      listening += 1;
      if (listening === count) resolve(address.port);
    });
    cluster.on("exit", (worker, code, signal) => {
      if (listening < count) reject(new Error(`worker ${worker.id} exited during start (${code ?? signal})`));
      else logger.log("warn", "worker exited", { worker: worker.id, code: code ?? -1 });
    });
    for (let i = 0; i < count; i++) cluster.fork({ [STATE_VARIABLE]: JSON.stringify(state) });
  });
}

/** The local demo's key: issued through the account store when there is one, so it shows in listings. */
function issueDemoKey(accounts: Accounts | undefined): { key: string; static: boolean } {
  if (accounts === undefined) return { key: newApiKey(), static: true };
  const email = "demo@example.com";
  const account = accounts.store.accountByEmail(email) ?? accounts.service.createAccount(email);
  return { key: accounts.service.issueKey(account.id, { networks: "*", plan: "shared" }).key, static: false };
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve((server.address() as { port: number }).port));
  });
}

function onSignal(stop: () => Promise<void>, logger: Logger): void {
  let stopping = false;
  const handler = async () => {
    if (stopping) return;
    stopping = true;
    logger.log("info", "shutting down");
    await stop();
    process.exit(0);
  };
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `gateway failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
