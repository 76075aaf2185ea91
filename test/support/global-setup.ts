import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import type { TestProject } from "vitest/node";
import { ROOT } from "../registry/helpers.js";

// Once per `vitest run` (vitest.config.ts's globalSetup): a scratch folder for the whole run, removed when it
// ends. Every test process gets it as its temporary directory (TMPDIR, which os.tmpdir() reads), so what a
// test leaves there (it should leave nothing: each removes its own folders) goes with the run. What is built
// once per run for several test files lives there too: the single executable (support/binary.ts); the
// bundles (support/bundles.ts) are built below node_modules and removed with it.

declare module "vitest" {
  export interface ProvidedContext {
    /** This run's scratch folder (support/global-setup.ts). */
    runDir: string;
  }
}

/** Where what one run builds for several test files is kept, under the run's folder. */
export const BUILDS = "builds";

/** Where the run's Chromium server (support/browser.ts) writes its pid and endpoint, under BUILDS. */
export const CHROMIUM_DIR = "chromium";

/**
 * Where one run's bundles go (support/bundles.ts): below node_modules, where the bundles' one external module
 * (better-sqlite3) is found from them, named after the run's folder.
 */
export function bundlesDirOf(runDir: string): string {
  return join(ROOT, "node_modules/.cache/gateway-test-bundles", basename(runDir));
}

export default function setup(project: TestProject): () => void {
  const runDir = mkdtempSync(join(tmpdir(), "gateway-test-run-"));
  // open as /tmp is (sticky, anyone may write): PostgreSQL runs as its own user in a folder under it
  chmodSync(runDir, 0o1777);
  project.provide("runDir", runDir);
  const previous = process.env.TMPDIR;
  // the test processes start after this, with this environment
  process.env.TMPDIR = runDir;
  // in watch mode, a rerun builds again from the files as they are then
  project.onTestsRerun(() => {
    stopChromium(join(runDir, BUILDS, CHROMIUM_DIR));
    rmSync(join(runDir, BUILDS), { recursive: true, force: true });
    rmSync(bundlesDirOf(runDir), { recursive: true, force: true });
  });
  return () => {
    stopChromium(join(runDir, BUILDS, CHROMIUM_DIR));
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    rmSync(runDir, { recursive: true, force: true });
    rmSync(bundlesDirOf(runDir), { recursive: true, force: true });
  };
}

/** Ends the run's Chromium server (support/browser.ts), if a file started one; it closes its browser. */
function stopChromium(dir: string): void {
  const pid = Number(existsSync(join(dir, "pid")) ? readFileSync(join(dir, "pid"), "utf8") : Number.NaN);
  if (!Number.isInteger(pid)) return;
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    // gone already
  }
}
