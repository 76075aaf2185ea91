import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { LocalNodeSpec } from "../config/types.js";
import type { Logger } from "../log.js";
import { packageRoot } from "../package-root.js";
import { freePort } from "./free-port.js";

export interface LocalNode {
  readonly label: string;
  readonly url: string;
  stop(): Promise<void>;
  /** Synchronous, for process exit. */
  kill(): void;
}

const BIN = join(packageRoot(), "node_modules/.bin");

/** Starts the configured local nodes (the demo's anvil) and waits until each answers on its port. */
export async function startLocalNodes(specs: readonly LocalNodeSpec[], logger: Logger): Promise<LocalNode[]> {
  const started: LocalNode[] = [];
  try {
    for (const spec of specs) {
      const node = await startOne(spec, logger);
      if (node !== undefined) started.push(node);
    }
  } catch (error) {
    await Promise.all(started.map((n) => n.stop()));
    throw error;
  }
  return started;
}

async function startOne(spec: LocalNodeSpec, logger: Logger): Promise<LocalNode | undefined> {
  const local = join(BIN, spec.command);
  const command = existsSync(local) ? local : spec.command;
  const port = await freePort();
  const child: ChildProcess = spawn(command, [...spec.args, "--host", "127.0.0.1", "--port", String(port)], {
    stdio: "ignore",
  });
  const spawned = await new Promise<Error | undefined>((resolve) => {
    child.once("spawn", () => resolve(undefined));
    child.once("error", resolve);
  });
  if (spawned !== undefined) {
    if (spec.optional) {
      logger.log("warn", "local node not started", { label: spec.label, command: spec.command });
      return undefined;
    }
    throw new Error(`cannot start ${spec.command} for ${spec.label}: ${spawned.message}`);
  }
  const url = `http://127.0.0.1:${port}`;
  await waitForPort(url, child);
  logger.log("info", "local node started", { label: spec.label, upstream: url });
  return {
    label: spec.label,
    url,
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

async function waitForPort(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`local node at ${url} exited with ${child.exitCode}`);
    try {
      await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw new Error(`local node at ${url} did not open its port`);
}
