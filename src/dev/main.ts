// First: V8 settings must hold before the other modules run (v8-flags.ts).
import "../v8-flags.js";
import cluster from "node:cluster";
import { endpointsByLabel, networkCodes } from "../../generated/endpoints.js";
import type { GatewayConfig, LabelUpstreams } from "../config/types.js";
import { type ControlPlane, createControlPlane } from "../control/plane.js";
import { exitOnStartFailure, LISTENERS, listen, loadConfigOrExit, onStopSignal } from "../lifecycle.js";
import { createLogger, type Logger } from "../log.js";
import { runProxy } from "../proxy/run.js";
import { printDemo } from "./demo.js";
import { type LocalNode, startLocalNodes } from "./local-nodes.js";

// `npm start`: the embedded demo. The control plane and the proxy in one process (the proxy's workers in
// their own), the local nodes the config names (anvil), and a key issued through the control plane and
// printed with curl lines that work as printed.
const config = loadConfigOrExit();
// a worker's lines say which worker wrote them, as the proxy's own (proxy/main.ts)
const logger = createLogger(
  config.log.level,
  undefined,
  cluster.worker === undefined ? {} : { worker: cluster.worker.id },
);
(cluster.isWorker ? serveWorker(config, logger) : startDemo(config, logger)).catch(exitOnStartFailure);

async function startDemo(config: GatewayConfig, logger: Logger): Promise<void> {
  if (config.demoKey && config.accounts === undefined)
    throw new Error("demoKey needs an accounts section: the demo key is issued through the account store");
  const nodes: LocalNode[] = await startLocalNodes(config.localNodes, logger);
  // Nodes it started must not outlive a failed start.
  process.once("exit", () => {
    for (const node of nodes) node.kill();
  });
  const upstreams: Record<string, LabelUpstreams> = { ...config.upstreams };
  for (const node of nodes) upstreams[node.label] ??= [node.url];

  // The control plane first: it creates the account store that the proxy reads.
  const control =
    config.accounts &&
    (await createControlPlane({
      config: config.accounts,
      networks: new Set(networkCodes),
      trustedProxies: config.trustedProxies,
      logger,
      gateway: config,
    }));
  const accountsPort =
    control &&
    config.accounts &&
    (await listen(control.api, config.accounts.listen.port, config.accounts.listen.host, LISTENERS.accounts));
  if (accountsPort !== undefined) logger.log("info", "accounts api listening", { port: accountsPort });
  const key = control && config.demoKey ? await issueDemoKey(control) : undefined;

  const proxy = await runProxy({ ...config, upstreams }, logger);
  const keys = proxy.accountKeys;
  // In one process a change applies at once; workers see it within accounts.followIntervalMs.
  if (keys !== undefined) control?.onKeysChanged(() => keys.refresh());
  logger.log("info", "gateway listening", {
    host: config.listen.host,
    port: proxy.port,
    domain: config.domain,
    workers: config.workers,
  });
  if (key !== undefined)
    printDemo({
      config,
      port: proxy.port,
      key,
      nodes,
      accountsPort,
      operatorPort: proxy.operatorPort,
      endpoints: endpointsByLabel,
    });

  // The demo runs in a terminal: closing it sends SIGHUP, which would end the process at once and leave
  // its anvil nodes running. It stops as on Ctrl-C instead, and takes its nodes with it.
  onStopSignal(
    async () => {
      await proxy.close();
      await control?.close();
      await Promise.all(nodes.map((n) => n.stop()));
    },
    logger,
    ["SIGINT", "SIGTERM", "SIGHUP"],
  );
}

async function serveWorker(config: GatewayConfig, logger: Logger): Promise<void> {
  // the primary's to act on (proxy/main.ts)
  process.on("SIGHUP", () => {});
  const proxy = await runProxy(config, logger);
  onStopSignal(() => proxy.close(), logger);
}

/** The demo's key, issued through the account store like any other, so it shows in listings. */
async function issueDemoKey(control: ControlPlane): Promise<string> {
  const email = "demo@example.com";
  const account =
    (await control.store.accountByEmail(email)) ?? (await control.service.admin.createAccount(email));
  return (await control.service.keys.issue(account.id, { networks: "*", plan: "shared" })).key;
}
