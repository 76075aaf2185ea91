import { endpointsByLabel } from "../generated/endpoints.js";
import { ConfigError, loadConfig } from "./config/load.js";
import type { GatewayConfig } from "./config/types.js";
import { curlLine } from "./dev/demo.js";
import { type LocalNode, startLocalNodes } from "./dev/local-nodes.js";
import { createGateway } from "./gateway.js";
import { newApiKey } from "./keys/issue.js";
import { StaticKeyStore } from "./keys/static-store.js";
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

  const demoKey = config.demoKey ? newApiKey() : undefined;
  const keys =
    demoKey === undefined ? config.keys : [...config.keys, { key: demoKey, networks: "*" as const }];
  const effective: GatewayConfig = { ...config, upstreams, keys };
  const gateway = createGateway({
    config: effective,
    keys: new StaticKeyStore(keys, config.defaultRate),
    logger,
  });

  await new Promise<void>((resolve, reject) => {
    gateway.server.once("error", reject);
    gateway.server.listen(config.listen.port, config.listen.host, resolve);
  });
  const { port } = gateway.server.address() as { port: number };
  logger.log("info", "gateway listening", { host: config.listen.host, port, domain: config.domain });
  if (demoKey !== undefined) printDemo(effective, port, demoKey, nodes);

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    logger.log("info", "shutting down");
    await gateway.close();
    await Promise.all(nodes.map((n) => n.stop()));
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

function printDemo(config: GatewayConfig, port: number, key: string, nodes: readonly LocalNode[]): void {
  const lines = ["", `API key (shown once, valid until this process stops): ${key}`, "", "Try it:"];
  for (const node of nodes) {
    const endpoint = endpointsByLabel.get(node.label);
    if (endpoint !== undefined) lines.push(`  ${curlLine(endpoint, config.domain, port, key)}`);
  }
  lines.push(
    "",
    `Every label is served at http://<label>.${config.domain}:${port}/<API_KEY>/ (curl resolves *.localhost by itself;`,
    `other clients can send the request to 127.0.0.1:${port} with a Host header of <label>.${config.domain}).`,
    "Labels without a local node answer 503 until GATEWAY_UPSTREAM_<LABEL> or a GATEWAY_CONFIG file gives them upstreams.",
    "",
  );
  process.stdout.write(`${lines.join("\n")}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `gateway failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
