import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildBinary } from "../../scripts/build-binary.js";

/** The single executable, built and copied alone into an empty folder, with a PATH that holds no `node`. */
export interface BinaryFolder {
  /** A scratch folder for the test's files (configs, stores). */
  readonly dir: string;
  /** The folder the binary was copied into, alone: its working directory. */
  readonly bin: string;
  readonly binary: string;
  /** PATH (an empty folder: no `node`) and HOME, nothing else. */
  readonly env: NodeJS.ProcessEnv;
}

export async function binaryInEmptyFolder(): Promise<BinaryFolder> {
  const dir = mkdtempSync(join(tmpdir(), "binary-"));
  const built = await buildBinary(join(dir, "build", "node-gateway"));
  const bin = join(dir, "bin");
  const empty = join(dir, "empty-path");
  mkdirSync(bin);
  mkdirSync(empty);
  const binary = join(bin, "node-gateway");
  copyFileSync(built, binary);
  return { dir, bin, binary, env: { PATH: empty, HOME: dir } };
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
      `keys: [{ key: ${key}, networks: "*", rate: { perSecond: 100000, burst: 100000 } }]`,
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

/** Starts the binary with `args` (and `env` besides the folder's); resolves once it logs that it listens. */
export function startBinary(
  folder: BinaryFolder,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
): Promise<RunningBinary> {
  const child = spawn(folder.binary, args, {
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
