#!/usr/bin/env node
import { networkCodes } from "../../generated/endpoints.js";
import { exitOnStartFailure, LISTENERS, listen, loadConfigOrExit, onStopSignal } from "../lifecycle.js";
import { createLogger } from "../log.js";
import { createControlPlane } from "./plane.js";

// The control plane, alone: `node dist/control-plane.js` (npm run build). It creates and migrates the
// account store the deployment config names, sends e-mail, and serves the self-service API. Proxies read
// the store's key grants on their own (proxy/main.ts).
// the control plane uses neither Redis nor the proxies' traces: a host without their secrets runs it
const config = loadConfigOrExit(["sharedLimits", "tracing"]);
const logger = createLogger(config.log.level);
const accounts = config.accounts;
if (accounts === undefined) {
  process.stderr.write("invalid configuration:\nthe deployment config has no accounts section\n");
  process.exit(2);
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
