import { spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ROOT } from "../registry/helpers.js";

/** What a snippet's process did: its exit code (null when the deadline killed it) and its output. */
export interface SnippetRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Inside the project, so the snippet's imports resolve from its node_modules; git ignores test/artifacts. */
export const SNIPPET_DIR = join(ROOT, "test/artifacts/snippets");
const HOSTS_HOOK = pathToFileURL(join(ROOT, "test/support/snippet-hosts.mjs")).href;

/**
 * Runs `code` as a customer would (`node snippet.mjs`), with names under `domain` resolving to loopback and
 * `caFile` trusted. The process is killed at `deadlineMs`; the file is removed afterwards.
 */
export function runSnippet(
  name: string,
  code: string,
  options: { domain: string; caFile: string; deadlineMs: number },
): Promise<SnippetRun> {
  mkdirSync(SNIPPET_DIR, { recursive: true });
  const file = join(SNIPPET_DIR, `${name}.mjs`);
  writeFileSync(file, code);
  return new Promise<SnippetRun>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", HOSTS_HOOK, file], {
      cwd: ROOT,
      env: { ...process.env, SNIPPET_HOSTS_DOMAIN: options.domain, NODE_EXTRA_CA_CERTS: options.caFile },
      stdio: ["ignore", "pipe", "pipe"],
      timeout: options.deadlineMs,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  }).finally(() => rmSync(file, { force: true }));
}
