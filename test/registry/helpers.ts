import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface CodegenRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs the real codegen CLI, as `npm run codegen` does, against any registry and output folder; in `cwd`, a
 * copy of the repository, it is that copy's own codegen.
 */
export function runCodegen(args: readonly string[], cwd = ROOT): Promise<CodegenRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "codegen/main.ts", ...args],
      { cwd, encoding: "utf8" },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}
