import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";
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

/** Headless Chromium, with the flags that keep it off the network it cannot reach here. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
      "--disable-sync",
    ],
  });
}
