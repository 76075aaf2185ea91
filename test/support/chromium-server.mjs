// One headless Chromium for a whole test run (support/browser.ts starts this once, detached): `node
// chromium-server.mjs DIR CHROMIUM FLAGS RUN_PID` launches it as a Playwright browser server with
// browser.ts's flags, writes its pid and WebSocket endpoint into DIR, and closes it when DIR is gone (the
// run's folder, removed at the end of the run, global-setup.ts), when the run's vitest process RUN_PID is
// gone (killed: no teardown), or on SIGTERM (global-setup.ts's teardown).
import { existsSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [dir, executablePath, flags, runPid] = process.argv.slice(2);
const server = await chromium.launchServer({ executablePath, headless: true, args: JSON.parse(flags) });
writeFileSync(join(dir, "pid"), String(process.pid));
// whole or not at all: the file's presence tells the waiting test it may read it
writeFileSync(join(dir, "endpoint.part"), server.wsEndpoint());
renameSync(join(dir, "endpoint.part"), join(dir, "endpoint"));
/** Whether the run's vitest process still runs. */
const runLives = () => {
  try {
    process.kill(Number(runPid), 0);
    return true;
  } catch {
    return false;
  }
};
// a run that ends without its teardown (killed) still takes its browser with it
const watch = setInterval(() => {
  if (!existsSync(dir) || !runLives()) {
    clearInterval(watch);
    void server.close();
  }
}, 1_000);
