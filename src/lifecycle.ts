import type { Server } from "node:http";
import { endpointsByLabel } from "../generated/endpoints.js";
import { ConfigError, loadConfig } from "./config/load.js";
import type { GatewayConfig } from "./config/types.js";
import type { Logger } from "./log.js";

// What each entry point (proxy/main.ts, control/main.ts, dev/main.ts) does at start and at stop.

/** Exit codes, as `node-gateway --help` and the README list them. */
export const EXIT = { OK: 0, START_FAILED: 1, INVALID: 2 } as const;

/** The deployment config, or exit 2 with its problems on stderr. */
export function loadConfigOrExit(): GatewayConfig {
  try {
    return loadConfig(endpointsByLabel);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`invalid configuration:\n${error.message}\n`);
    process.exit(EXIT.INVALID);
  }
}

export function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve((server.address() as { port: number }).port));
  });
}

/** Runs `stop` once on SIGINT or SIGTERM, then exits 0. */
export function onStopSignal(stop: () => Promise<void>, logger: Logger): void {
  let stopping = false;
  const handler = async () => {
    if (stopping) return;
    stopping = true;
    logger.log("info", "shutting down");
    await stop();
    process.exit(EXIT.OK);
  };
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
}

/** Exits 1 with the reason on stderr when an entry point fails to start. */
export function exitOnStartFailure(error: unknown): never {
  process.stderr.write(`failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(EXIT.START_FAILED);
}
