// First: V8 settings must hold before the other modules run (v8-flags.ts).
import "../v8-flags.js";
import cluster from "node:cluster";
import { exitOnStartFailure, loadConfigOrExit, onStopSignal } from "../lifecycle.js";
import { createLogger } from "../log.js";
import { runProxy } from "./run.js";

// The proxy, alone: `node dist/gateway.js` (npm run build). It serves the labels of the deployment config
// (GATEWAY_CONFIG, else deploy/local.yaml) with its static keys and, when the config names an account
// store, the keys the control plane keeps there. It never writes the store and needs no control plane
// running, only the store it created.
const config = loadConfigOrExit();
const logger = createLogger(config.log.level);
runProxy(config, logger).then((proxy) => {
  if (cluster.isPrimary) {
    logger.log("info", "gateway listening", {
      host: config.listen.host,
      port: proxy.port,
      operatorPort: proxy.operatorPort,
      domain: config.domain,
      workers: config.workers,
    });
  }
  onStopSignal(() => proxy.close(), logger);
}, exitOnStartFailure);
