import cluster from "node:cluster";
import type { Server } from "node:http";
import { parseArgs } from "node:util";
import { endpointsByLabel } from "../generated/endpoints.js";
import { ConfigError, loadConfig } from "./config/load.js";
import type { GatewayConfig } from "./config/types.js";
import { versionLine } from "./embedded.js";
import type { Logger } from "./log.js";
import type { StartFailedMessage } from "./proxy/worker-link.js";

// What each entry point (proxy/main.ts, control/main.ts, dev/main.ts) does at start and at stop.

/** Exit codes, as `node-gateway --help` and the README list them. */
export const EXIT = { OK: 0, START_FAILED: 1, INVALID: 2 } as const;

/**
 * An entry's command line: `--config PATH` (set as GATEWAY_CONFIG), `--help` (its usage, exit 0),
 * `--version` where `program` names it (its version line, exit 0), and its own boolean `flags`. A flag it
 * does not know is refused with its usage, exit 2, never ignored while the entry starts.
 */
export function readCommandLine(
  usage: string,
  {
    program,
    args = process.argv.slice(2),
    flags = [],
  }: {
    program?: string;
    args?: string[];
    flags?: readonly string[];
  } = {},
): Readonly<Record<string, string | boolean | undefined>> {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args,
      options: {
        config: { type: "string" },
        help: { type: "boolean", short: "h" },
        ...(program === undefined ? {} : { version: { type: "boolean" } }),
        ...Object.fromEntries(flags.map((flag) => [flag, { type: "boolean" as const }])),
      },
    }).values;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${usage}\n`);
    process.exit(EXIT.INVALID);
  }
  if (values.help === true) {
    process.stdout.write(`${usage}\n`);
    process.exit(EXIT.OK);
  }
  if (values.version === true && program !== undefined) {
    process.stdout.write(`${versionLine(program)}\n`);
    process.exit(EXIT.OK);
  }
  if (typeof values.config === "string") process.env.GATEWAY_CONFIG = values.config;
  return values;
}

/** The deployment config, or exit 2 with its problems on stderr. */
export function loadConfigOrExit(unused: Parameters<typeof loadConfig>[2] = []): GatewayConfig {
  try {
    return loadConfig(endpointsByLabel, process.env, unused);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`invalid configuration:\n${error.message}\n`);
    process.exit(EXIT.INVALID);
  }
}

/** A listener as an operator moves it: what it serves, its config section, the variables for it. */
export interface Listener {
  readonly name: string;
  readonly section: string;
  readonly portVariable: string;
  readonly hostVariable?: string;
}

export const LISTENERS = {
  proxy: {
    name: "the gateway",
    section: "listen",
    portVariable: "GATEWAY_PORT",
    hostVariable: "GATEWAY_HOST",
  },
  operator: { name: "the operator API", section: "operator.listen", portVariable: "GATEWAY_OPERATOR_PORT" },
  accounts: {
    name: "the self-service API",
    section: "accounts.listen",
    portVariable: "GATEWAY_ACCOUNTS_PORT",
  },
} as const satisfies Record<string, Listener>;

/**
 * Listens on `host:port`; resolves with the port (the one the system chose for 0). A failure says which
 * listener, why, and the setting and variable that move it: the defaults 8080 to 8082 are often taken.
 */
export function listen(server: Server, port: number, host: string, listener: Listener): Promise<number> {
  return new Promise((resolve, reject) => {
    const fail = (error: NodeJS.ErrnoException) => reject(cannotListen(listener, host, port, error));
    server.once("error", fail);
    try {
      server.listen(port, host, () => resolve((server.address() as { port: number }).port));
    } catch (error) {
      // listen() throws at once on some arguments (a port out of range): still this listener's failure.
      fail(error as NodeJS.ErrnoException);
    }
  });
}

const WHY: Readonly<Record<string, string>> = {
  EADDRINUSE: "the port is taken",
  EACCES: "permission denied (a port below 1024 needs privileges)",
  EADDRNOTAVAIL: "the address is not one of this machine's",
  ENOTFOUND: "no such host",
  EAI_AGAIN: "the host name cannot be resolved",
};

function cannotListen(listener: Listener, host: string, port: number, error: NodeJS.ErrnoException): Error {
  const code = error.code ?? "";
  const why = WHY[code] === undefined ? error.message : `${WHY[code]} (${code})`;
  const hostIsWrong = ["EADDRNOTAVAIL", "ENOTFOUND", "EAI_AGAIN"].includes(code);
  const move = hostIsWrong
    ? `${listener.section}.host in the deployment config${listener.hostVariable === undefined ? "" : ` or ${listener.hostVariable}`}`
    : `${listener.section}.port in the deployment config or ${listener.portVariable} (0 takes any free port)`;
  const address = host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
  return new Error(
    `${listener.name} cannot listen on ${address} (${listener.section}): ${why}; move it with ${move}`,
  );
}

/** Runs `stop` once on the first of `signals` (SIGINT or SIGTERM), then exits 0. */
export function onStopSignal(
  stop: () => Promise<void>,
  logger: Logger,
  signals: readonly NodeJS.Signals[] = ["SIGINT", "SIGTERM"],
): void {
  let stopping = false;
  const handler = async () => {
    if (stopping) return;
    stopping = true;
    logger.log("info", "shutting down");
    await stop();
    process.exit(EXIT.OK);
  };
  for (const signal of signals) process.on(signal, handler);
}

/**
 * Exits 1 with the reason on stderr when an entry point fails to start. A cluster's worker tells its
 * primary instead, which says it once for all of them (proxy/cluster.ts): every worker meets the same
 * cause, and an operator reads one line.
 */
export function exitOnStartFailure(error: unknown): void {
  const reason = error instanceof Error ? error.message : String(error);
  if (cluster.isWorker && process.connected && process.send !== undefined) {
    const failed: StartFailedMessage = { type: "gateway:start-failed", reason };
    process.send(failed, undefined, {}, () => process.exit(EXIT.START_FAILED));
    return;
  }
  process.stderr.write(`failed to start: ${reason}\n`);
  process.exit(EXIT.START_FAILED);
}
