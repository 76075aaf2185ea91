#!/usr/bin/env node
import { networkCodes } from "../../generated/endpoints.js";
import {
  EXIT,
  exitOnStartFailure,
  LISTENERS,
  listen,
  loadConfigOrExit,
  onStopSignal,
  readCommandLine,
} from "../lifecycle.js";
import { createLogger } from "../log.js";
import { dashboardUrl, isUnspecified } from "./endpoint-urls.js";
import { createControlPlane } from "./plane.js";

// The control plane, alone: `node dist/control-plane.js` (npm run build). It creates and migrates the
// account store the deployment config names, sends e-mail, and serves the self-service API. Proxies read
// the store's key grants on their own (proxy/main.ts).
const USAGE = `usage: node dist/control-plane.js [--config PATH] [--version] [--help]

  --config PATH    the deployment config (the same as GATEWAY_CONFIG), whose accounts section names the
                   store, the mail and the self-service listener; the embedded default without it
  --version        the gateway's version and the registry's stamp
  --help           this text

exit codes: 0 stopped by a signal; 1 failed to start (a port taken, the store unreachable); 2 an invalid
config or command line.

Environment: GATEWAY_CONFIG, GATEWAY_ACCOUNTS_DB, GATEWAY_ACCOUNTS_HOST, GATEWAY_ACCOUNTS_PORT, GATEWAY_SMTP_URL, … (docs/configuration.md).`;

// the same command line as the proxy's (lifecycle.ts): a flag it does not know is refused, not ignored
// while the embedded default's store is made in the working directory
readCommandLine(USAGE, { program: "node-gateway-control-plane" });

// the control plane uses neither Redis nor the proxies' traces: a host without their secrets runs it
const config = loadConfigOrExit(["sharedLimits", "tracing"]);
const logger = createLogger(config.log.level);
const accounts = config.accounts;
if (accounts === undefined) {
  process.stderr.write("invalid configuration:\nthe deployment config has no accounts section\n");
  process.exit(EXIT.INVALID);
}
createControlPlane({
  config: accounts,
  networks: new Set(networkCodes),
  trustedProxies: config.trustedProxies,
  logger,
  gateway: config,
})
  .then(async (control) => {
    const port = await listen(control.api, accounts.listen.port, accounts.listen.host, LISTENERS.accounts);
    logger.log("info", "control plane listening", { host: accounts.listen.host, port });
    // the e-mails' links name the listener without publicUrl: on every interface, that is this machine alone
    if (accounts.publicUrl === undefined && isUnspecified(accounts.listen.host))
      logger.log("warn", "accounts.publicUrl is not set", {
        links: dashboardUrl({ listen: { ...accounts.listen, port } }),
        hint: "e-mails link the dashboard there, which customers on other machines cannot open: set accounts.publicUrl (GATEWAY_PUBLIC_URL)",
      });
    onStopSignal(() => control.close(), logger);
    // A SIGHUP ends a process by default, and proxies reload on it: one sent to every process of a
    // deployment must not stop the control plane, which reads its config at start only.
    process.on("SIGHUP", () =>
      logger.log(
        "warn",
        "SIGHUP ignored: the control plane reads its config at start; restart it to apply a change",
      ),
    );
  })
  .catch(exitOnStartFailure);
