import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { inject } from "vitest";
import { ROOT } from "../registry/helpers.js";
import { buildOnce } from "./build-once.js";
import { eventually } from "./eventually.js";
import { BUILDS, CHROMIUM_DIR } from "./global-setup.js";
import { skipUnlessCi } from "./services.js";

/** Debian's Chromium (package `chromium`); playwright-core never downloads a browser of its own. */
export const CHROMIUM = "/usr/bin/chromium";

/**
 * Whether the browser suites can run: skipped with a printed reason where Chromium is missing, and a
 * failure under CI (`.ci/run` installs it).
 */
export function needChromium(): { skip: boolean; reason: string } {
  return skipUnlessCi(
    existsSync(CHROMIUM)
      ? []
      : [
          {
            suites: "browser",
            reason: `${CHROMIUM} is missing (bash scripts/system-packages.sh, as root, installs it)`,
          },
        ],
  );
}

/** The flags that keep Chromium off the network it cannot reach here. */
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-sync",
];

/** Longer than Chromium takes to start on a loaded 2-core machine (about 2 s alone). */
const START_WAIT_MS = 60_000;

let endpoint: Promise<string> | undefined;

/**
 * The WebSocket endpoint of the run's one headless Chromium, started by the first file that asks
 * (support/chromium-server.mjs, detached: it outlives that file's process) and closed at the end of the run.
 */
function runChromium(): Promise<string> {
  endpoint ??= (async () => {
    const dir = join(inject("runDir"), BUILDS, CHROMIUM_DIR);
    const file = join(dir, "endpoint");
    await buildOnce(dir, "Chromium", START_WAIT_MS, async () => {
      const server = spawn(
        process.execPath,
        // the test process's parent: vitest's own process, which outlives every test process
        [
          join(ROOT, "test/support/chromium-server.mjs"),
          dir,
          CHROMIUM,
          JSON.stringify(FLAGS),
          String(process.ppid),
        ],
        { cwd: ROOT, detached: true, stdio: ["ignore", "ignore", "pipe"] },
      );
      let stderr = "";
      server.stderr?.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      try {
        await eventually(
          () => {
            if (server.exitCode !== null) throw new Error(`Chromium's server exited: ${stderr}`);
            return existsSync(file);
          },
          START_WAIT_MS,
          "Chromium's server",
        );
      } finally {
        server.stderr?.destroy();
        server.unref();
      }
    });
    return readFileSync(file, "utf8");
  })();
  return endpoint;
}

/**
 * Headless Chromium, with the flags that keep it off the network it cannot reach here: a connection to the
 * run's one browser, started once for every file (a launch cost some 2.5 s of CPU). Each file's contexts and
 * pages are its own, as in a browser of its own; its close() closes them and the connection, not the browser.
 */
export async function launchChromium(): Promise<Browser> {
  return chromium.connect(await runChromium());
}
