import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, linkSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inject } from "vitest";
import { buildBinary } from "../../scripts/build-binary.js";
import { buildOnce } from "./build-once.js";
import { BUILDS } from "./global-setup.js";

/** The single executable, built and copied alone into an empty folder, with a PATH that holds no `node`. */
export interface BinaryFolder {
  /** A scratch folder for the test's files (configs, stores). */
  readonly dir: string;
  /** The folder the binary was copied into, alone: its working directory. */
  readonly bin: string;
  readonly binary: string;
  /** PATH (an empty folder: no `node`) and HOME, nothing else. */
  readonly env: NodeJS.ProcessEnv;
  /** Removes the folder and everything in it; once every process run from it has exited. */
  remove(): void;
}

/** Longer than a build takes on a loaded 2-core machine; within the binary suites' 120 s hook timeout. */
const BUILD_WAIT_MS = 110_000;

let built: Promise<string> | undefined;

/**
 * The binary, built once per run (`npm run build:binary`'s build, into the run's folder, global-setup.ts) for
 * every test file that runs it: the first file to ask builds it, files in other test processes wait for it.
 */
export function builtBinary(): Promise<string> {
  built ??= buildBinaryOnce();
  return built;
}

async function buildBinaryOnce(): Promise<string> {
  const dir = join(inject("runDir"), BUILDS, "binary");
  const binary = join(dir, "node-gateway");
  await buildOnce(dir, "the binary", BUILD_WAIT_MS, () => buildBinary(binary));
  return binary;
}

/** The run's binary, alone in a new folder of its own (a hard link: the same file, no 90 MB copy). */
export async function binaryInEmptyFolder(): Promise<BinaryFolder> {
  const built = await builtBinary();
  const dir = mkdtempSync(join(tmpdir(), "binary-"));
  const bin = join(dir, "bin");
  const empty = join(dir, "empty-path");
  mkdirSync(bin);
  mkdirSync(empty);
  const binary = join(bin, "node-gateway");
  try {
    linkSync(built, binary);
  } catch {
    copyFileSync(built, binary); // another file system
  }
  return {
    dir,
    bin,
    binary,
    env: { PATH: empty, HOME: dir },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * Writes the deployment a binary test runs: `gw.test`, any port, no operator API, no probing, `key` with a
 * rate the test cannot reach, and `eth` on `upstream` (a URL, or a `{ url, ws }` flow map); `extra` lines after.
 * Returns the file; the line numbers of `extra` start at 8.
 */
export function writeDeployment(
  file: string,
  upstream: string,
  key: string,
  extra: readonly string[] = [],
): string {
  writeFileSync(
    file,
    [
      "domain: gw.test",
      "listen: { host: 127.0.0.1, port: 0 }",
      "operator: null",
      "health: { probeIntervalMs: 0 }",
      `upstreams: { eth: [${upstream.startsWith("{") ? upstream : `"${upstream}"`}] }`,
      // on the dedicated plan: the calls these suites stream must all be served, however fast the host (the
      // shared plan's 2,000 CU a second is 200 eth_blockNumber calls, with bursts of 400)
      `keys: [{ key: ${key}, networks: "*", plan: dedicated, rate: { perSecond: 100000, burst: 100000 } }]`,
      "log: { level: info, access: false }",
      ...extra,
    ].join("\n"),
  );
  return file;
}

export interface RunningBinary {
  readonly child: ChildProcess;
  readonly port: number;
  /** The operator API's port; undefined when the config has none. */
  readonly operatorPort: number | undefined;
  /** Its log lines (stderr), as they arrive. */
  readonly logs: string[];
  /** Resolves with its exit code. */
  readonly exited: Promise<number | null>;
}

/**
 * Starts the binary with `args` (and `env` besides the folder's); resolves once it logs that it listens.
 * `command` is how it is invoked: its absolute path, or as an operator types it in its folder.
 */
export function startBinary(
  folder: BinaryFolder,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  command: string = folder.binary,
): Promise<RunningBinary> {
  const child = spawn(command, args, {
    cwd: folder.bin,
    env: { ...folder.env, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    child.stderr?.on("data", (chunk: Buffer) => {
      logs.push(...chunk.toString().split("\n").filter(Boolean));
      const line = logs.find((l) => l.includes('"msg":"gateway listening"'));
      if (line === undefined) return;
      const { port, operatorPort } = JSON.parse(line) as { port: number; operatorPort?: number };
      resolve({ child, port, operatorPort, logs, exited });
    });
    void exited.then((code) => reject(new Error(`exited with ${code}: ${logs.join("\n")}`)));
  });
}

/** Kills a binary the test started (its own child, by PID) if it still runs, and waits until it has exited. */
export async function stopBinary(running: RunningBinary | undefined): Promise<void> {
  if (running === undefined) return;
  if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill("SIGKILL");
  await running.exited;
}
