#!/usr/bin/env node
// First: V8 settings must hold before the other modules run (v8-flags.ts).
import "../v8-flags.js";
import cluster from "node:cluster";
import { endpointsByLabel, registryStamp } from "../../generated/endpoints.js";
import { ConfigError, loadConfig } from "../config/load.js";
import { changedRestartOnly } from "../config/restart-only.js";
import type { GatewayConfig } from "../config/types.js";
import { EMBEDDED_CONFIG } from "../embedded.js";
import { EXIT, exitOnStartFailure, loadConfigOrExit, onStopSignal, readCommandLine } from "../lifecycle.js";
import { createLogger, type Logger } from "../log.js";
import { reloadCounted } from "../metrics/process-info.js";
import { createStoreOnFirstRun } from "./first-run.js";
import { type RunningProxy, runProxy } from "./run.js";
import { configFromPrimary } from "./worker-link.js";

// The proxy, alone: `node dist/gateway.js` (npm run build), or the single executable `dist/node-gateway`
// (npm run build:binary). It serves the labels of the deployment config (--config, GATEWAY_CONFIG, else the
// embedded default) with its static keys and, when the config names an account store, the keys the control
// plane keeps there. It never writes the store but for usage counts, and needs no control plane running;
// on the embedded default's first run it creates the empty store (first-run.ts).

const USAGE = `usage: node-gateway [--config PATH] [--check-config] [--version] [--help]
       node-gateway admin <command> [flags]   the operator CLI: accounts and keys (node-gateway admin --help;
                                              node dist/admin.js beside node dist/gateway.js)

  --config PATH    the deployment config (the same as GATEWAY_CONFIG); the embedded default without it:
                   127.0.0.1:8080, the operator API on 8082, and the account store .data/gateway.sqlite
                   under the working directory, created on the first run
  --check-config   validate the config and the environment's settings against the schema and the registry
                   built into this gateway, print each problem as file:line:column or as the variable that
                   set it, and exit: 0 when it is valid, 2 when not. Run it before a reload.
  --version        the gateway's version and the registry's stamp
  --help           this text

signals:
  SIGHUP           re-read the config: upstreams, health, limits and static keys. New requests use it;
                   requests and WebSocket connections in flight finish on the old one. A config that
                   fails validation is refused, its problems logged, and the old one keeps serving.
  SIGTERM, SIGINT  drain: /readyz turns 503, the listener stops accepting, requests in flight finish
                   (limits.drainTimeoutMs), WebSockets close with 1001, then exit 0.

exit codes: 0 stopped by a signal, or --check-config found no problem; 1 failed to start (a port taken:
the message names the setting and variable that move it; the account store unreadable); 2 an invalid
config or command line.

Environment: GATEWAY_CONFIG, GATEWAY_PORT, GATEWAY_HOST, GATEWAY_UPSTREAM_<LABEL>, GATEWAY_LOG_LEVEL, …
(docs/configuration.md).`;

// `node-gateway admin …`, as the single executable takes it (single-executable.ts): the package's
// `node-gateway` command is this file, and its usage names the operator CLI. The CLI is its own bundle
// beside this one (dist/admin.js, scripts/build.ts), loaded by a path esbuild does not follow: the
// proxy's bundle holds no control-plane module (test/proxy/split.test.ts).
const adminAt = cluster.isPrimary ? adminCommandAt(process.argv) : -1;
if (adminAt >= 0) {
  const cli = import.meta.url.endsWith(".ts") ? "../control/cli.js" : "./admin.js";
  // the CLI reads its command after the program's path, and takes --config as the gateway does
  process.argv.splice(adminAt, 1);
  import(cli).catch((error: Error) => {
    process.stderr.write(
      `node-gateway admin: the operator CLI could not be loaded (${cli}): ${error.message}\n`,
    );
    process.exitCode = EXIT.START_FAILED;
  });
} else serve();

function serve(): void {
  const args = readCommandLine(USAGE, { program: "node-gateway", args: ownArgs(), flags: ["check-config"] });
  if (args["check-config"] === true) checkConfig();
  // The primary re-reads the config and hands it to its workers (proxy/worker-link.ts). A SIGHUP sent to a
  // worker, as `kill -HUP -<group>` or `pkill -HUP -f gateway.js` do, would end it by default, and with
  // it the requests it serves: a worker takes no note of it, from before it asks its primary for a config.
  if (cluster.isWorker) process.on("SIGHUP", () => {});
  // a worker serves what its primary serves, never the file as it is now (worker-link.ts)
  if (cluster.isWorker) void configFromPrimary().then(start);
  else start(loadConfigOrExit());
}

function start(config: GatewayConfig): void {
  // a worker's lines say which worker wrote them: each probes and judges its nodes on its own
  const logger = createLogger(
    config.log.level,
    undefined,
    cluster.worker === undefined ? {} : { worker: cluster.worker.id },
  );
  // The embedded default runs with no setup, its account store included; workers find it made.
  if (cluster.isPrimary && !process.env.GATEWAY_CONFIG) {
    try {
      createStoreOnFirstRun(config, logger);
    } catch (error) {
      exitOnStartFailure(error);
    }
  }
  // A signal that comes while the proxy starts (a start may wait seconds for its store or Redis) is taken
  // as it would be once it listens, never by its default action, which ends the process with no line: a
  // SIGHUP's reload is made once it listens, a stop closes it once it has started.
  let running: RunningProxy | undefined;
  let reloadAsked = false;
  if (cluster.isPrimary)
    process.on("SIGHUP", () => {
      if (running === undefined) reloadAsked = true;
      else reload(running, config, logger);
    });
  const started = runProxy(config, logger);
  // a start that fails exits 1 (exitOnStartFailure): a stop then has nothing to close
  onStopSignal(
    () =>
      started.then(
        (proxy) => proxy.close(),
        () => {},
      ),
    logger,
  );
  started.then((proxy) => {
    running = proxy;
    if (cluster.isPrimary) {
      logger.log("info", "gateway listening", {
        host: config.listen.host,
        port: proxy.port,
        operatorPort: proxy.operatorPort,
        domain: config.domain,
        workers: config.workers,
      });
      if (reloadAsked) reload(proxy, config, logger);
    }
  }, exitOnStartFailure);
}

/**
 * SIGHUP: the config read again and, when valid, served; when not, the old one keeps serving. A change to
 * a setting that takes a restart is named in a warning, so that "reloaded" never hides one that was not.
 */
function reload(proxy: RunningProxy, config: GatewayConfig, logger: Logger): void {
  try {
    const next = loadConfig(endpointsByLabel);
    proxy.reload(next);
    // against what the process runs, which a reload never changes: a change stays named until a restart,
    // and one taken back names nothing
    const notApplied = changedRestartOnly(config, next);
    reloadCounted("success");
    logger.log("info", "config reloaded", { file: configFileName() });
    if (notApplied.length > 0)
      logger.log("warn", "config reloaded without these settings, which take a restart", {
        settings: notApplied.join(", "),
      });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    reloadCounted("failure");
    logger.log("error", "config reload refused: the old config keeps serving", {
      problems: error.message,
    });
  }
}

/** The config's file as an operator finds it: the embedded default is no file beside the binary. */
function configFileName(): string {
  return process.env.GATEWAY_CONFIG || `${EMBEDDED_CONFIG} (embedded)`;
}

function checkConfig(): never {
  try {
    const checked = loadConfig(endpointsByLabel);
    const file = configFileName();
    const labels = Object.keys(checked.upstreams).length;
    process.stdout.write(
      `${file}: valid (${labels} labels with upstreams; registry ${registryStamp}, ${endpointsByLabel.size} labels)\n`,
    );
    process.exit(EXIT.OK);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`invalid configuration:\n${error.message}\n`);
    process.exit(EXIT.INVALID);
  }
}

/** Where `admin` is in `argv`: the first word after the program's path, or after a `--config` before it; else -1. */
function adminCommandAt(argv: readonly string[]): number {
  let at = 2;
  if (argv[at] === "--config") at += 2;
  else if (argv[at]?.startsWith("--config=") === true) at += 1;
  return argv[at] === "admin" ? at : -1;
}

/**
 * The command line after the program: a script's argv[1] is the script, a single executable's is itself.
 * A worker that node:cluster forks from a single executable gets the executable's path once more, as the
 * script it was told to run.
 */
function ownArgs(): string[] {
  const args = process.argv.slice(2);
  return cluster.isWorker && args[0] === process.execPath ? args.slice(1) : args;
}
