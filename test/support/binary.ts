import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync } from "node:fs";
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

export interface RunningBinary {
  readonly child: ChildProcess;
  readonly port: number;
  /** Its log lines (stderr), as they arrive. */
  readonly logs: string[];
  /** Resolves with its exit code. */
  readonly exited: Promise<number | null>;
}

/** Starts the binary with `args`; resolves once it logs that it listens. */
export function startBinary(folder: BinaryFolder, args: readonly string[]): Promise<RunningBinary> {
  const child = spawn(folder.binary, args, {
    cwd: folder.bin,
    env: folder.env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    child.stderr?.on("data", (chunk: Buffer) => {
      logs.push(...chunk.toString().split("\n").filter(Boolean));
      const line = logs.find((l) => l.includes('"msg":"gateway listening"'));
      if (line !== undefined)
        resolve({ child, port: (JSON.parse(line) as { port: number }).port, logs, exited });
    });
    void exited.then((code) => reject(new Error(`exited with ${code}: ${logs.join("\n")}`)));
  });
}
