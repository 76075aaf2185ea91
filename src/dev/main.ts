// First: V8 settings must hold before the other modules run (v8-flags.ts).
import "../v8-flags.js";
import cluster from "node:cluster";
import { endpointsByLabel, networkCodes } from "../../generated/endpoints.js";
import type { GatewayConfig, LabelUpstreams } from "../config/types.js";
import { type ControlPlane, createControlPlane } from "../control/plane.js";
import {
  exitOnStartFailure,
  LISTENERS,
  listen,
  loadConfigOrExit,
  onStopSignal,
  readCommandLine,
} from "../lifecycle.js";
import { createLogger, type Logger } from "../log.js";
import { runProxy } from "../proxy/run.js";
import { configFromPrimary } from "../proxy/worker-link.js";
import { printDemo } from "./demo.js";
import { type LocalNode, startLocalNodes } from "./local-nodes.js";

// `npm start`: the embedded demo. The control plane and the proxy in one process (the proxy's workers in
// their own), the local nodes the config names (anvil), and a key issued through the control plane and
// printed with curl lines that work as printed.
const USAGE = `usage: npm start   (node dist/demo.js [--config PATH] [--help])

  --config PATH    the deployment config (the same as GATEWAY_CONFIG); the embedded default without it:
                   the gateway on 127.0.0.1:8080, the self-service API and dashboard on 8081, the operator
                   API on 8082, two local anvil nodes behind eth and eth-archive, and a demo key
  --help           this text

Ctrl-C, SIGTERM or SIGHUP stops it, its local nodes with it.

exit codes: 0 stopped by a signal; 1 failed to start (a port taken: the message names the setting and
variable that move it); 2 an invalid config or command line.

Environment: GATEWAY_CONFIG, GATEWAY_PORT, GATEWAY_ACCOUNTS_PORT, GATEWAY_OPERATOR_PORT,
GATEWAY_UPSTREAM_<LABEL>, … (docs/configuration.md).`;

// the same command line as the other entries' (lifecycle.ts): a flag it does not know is refused, not
// ignored while the whole demo starts. A cluster's worker is forked with the same arguments.
readCommandLine(USAGE);

// a worker serves what its primary serves, its local nodes among its upstreams (proxy/worker-link.ts)
(cluster.isWorker ? configFromPrimary() : Promise.resolve(loadConfigOrExit()))
  .then((config) => {
    // a worker's lines say which worker wrote them, as the proxy's own (proxy/main.ts)
    const logger = createLogger(
      config.log.level,
      undefined,
      cluster.worker === undefined ? {} : { worker: cluster.worker.id },
    );
    return cluster.isWorker ? serveWorker(config, logger) : startDemo(config, logger);
  })
  .catch(exitOnStartFailure);

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
  // Issued before the proxy starts, so that its workers read it with the store's other keys; revoked when
  // the proxy cannot start (a port taken), or an active key with every network and archive access would
  // stay behind in the store, never printed.
  const demo = control && config.demoKey ? await issueDemoKey(control) : undefined;
  const key = demo?.key;

  const proxy = await runProxy({ ...config, upstreams }, logger).catch(async (error: unknown) => {
    if (demo !== undefined && control) await control.service.keys.revokeAny(demo.id).catch(() => {});
    throw error;
  });
  // a gateway on port 0 took a free one: the dashboard and the key e-mails name it
  control?.gatewayListening(proxy.port);
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
async function issueDemoKey(control: ControlPlane): Promise<{ key: string; id: number }> {
  const email = "demo@example.com";
  const account =
    (await control.store.accountByEmail(email)) ?? (await control.service.admin.createAccount(email));
  const { key, view } = await control.service.keys.issue(account.id, { networks: "*", plan: "shared" });
  return { key, id: view.id };
}
