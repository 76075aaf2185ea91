import type { Server } from "node:http";
import { endpointsByLabel, networkCodes } from "../generated/endpoints.js";
import { type Accounts, setUpAccounts } from "./accounts/setup.js";
import { ConfigError, loadConfig } from "./config/load.js";
import type { GatewayConfig } from "./config/types.js";
import { printDemo } from "./dev/demo.js";
import { type LocalNode, startLocalNodes } from "./dev/local-nodes.js";
import { createGateway } from "./gateway.js";
import { KeyStoreChain } from "./keys/chain.js";
import { newApiKey } from "./keys/issue.js";
import { StaticKeyStore } from "./keys/static-store.js";
import type { KeyStore } from "./keys/types.js";
import { createLogger } from "./log.js";

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
  const nodes: LocalNode[] = await startLocalNodes(config.localNodes, logger);
  const upstreams = { ...config.upstreams };
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
  const stores: KeyStore[] = [new StaticKeyStore(config.keys, config.defaultRate)];
  if (accounts !== undefined) stores.push(accounts.keys);
  const demoKey = config.demoKey ? issueDemoKey(accounts, stores) : undefined;

  const effective: GatewayConfig = { ...config, upstreams };
  const gateway = createGateway({ config: effective, keys: new KeyStoreChain(stores), logger });
  accounts?.keys.onWithdrawn((keyId) => gateway.closeConnectionsOf(keyId));

  const port = await listen(gateway.server, config.listen.port, config.listen.host);
  logger.log("info", "gateway listening", { host: config.listen.host, port, domain: config.domain });
  const accountsPort =
    accounts &&
    (await listen(
      accounts.api,
      config.accounts?.listen.port ?? 0,
      config.accounts?.listen.host ?? "127.0.0.1",
    ));
  if (accountsPort !== undefined)
    logger.log("info", "accounts api listening", {
      port: accountsPort,
      outbox: config.accounts?.mail.smtp ? undefined : config.accounts?.mail.outbox,
    });
  if (demoKey !== undefined)
    printDemo({ config: effective, port, key: demoKey, nodes, accountsPort, endpoints: endpointsByLabel });

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    logger.log("info", "shutting down");
    await gateway.close();
    await accounts?.close();
    await Promise.all(nodes.map((n) => n.stop()));
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

/** The local demo's key: issued through the account store when there is one, so it shows in listings. */
function issueDemoKey(accounts: Accounts | undefined, stores: KeyStore[]): string {
  if (accounts === undefined) {
    const key = newApiKey();
    stores.unshift(new StaticKeyStore([{ key, networks: "*" }], { perSecond: 50, burst: 100 }));
    return key;
  }
  const email = "demo@example.com";
  const account = accounts.store.accountByEmail(email) ?? accounts.service.createAccount(email);
  return accounts.service.issueKey(account.id, { networks: "*", plan: "shared" }).key;
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve((server.address() as { port: number }).port));
  });
}

main().catch((error: unknown) => {
  process.stderr.write(
    `gateway failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
