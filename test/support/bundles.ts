import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Metafile } from "esbuild";
import { inject } from "vitest";
import { buildBundles, ENTRIES } from "../../scripts/build.js";
import { buildOnce } from "./build-once.js";
import { bundlesDirOf } from "./global-setup.js";

/** The four bundles `npm run build` makes, built once per run for every test that runs one. */
export interface Bundles {
  /** Their folder (global-setup.ts bundlesDirOf), removed with the run's. */
  readonly dir: string;
  /** esbuild's account of what went into each. */
  readonly metafile: Metafile;
}

/** Longer than a build takes on a loaded 2-core machine (about 2 s alone). */
const BUILD_WAIT_MS = 60_000;

let built: Promise<Bundles> | undefined;

/**
 * The bundles, built once per run: a process started from one costs a fraction of one started from source
 * through tsx (0.36 against 1.9 s of CPU for the proxy's entry), which a dozen suites do many times.
 */
export function builtBundles(): Promise<Bundles> {
  built ??= (async () => {
    const dir = bundlesDirOf(inject("runDir"));
    const meta = join(dir, "meta.json");
    await buildOnce(dir, "the bundles", BUILD_WAIT_MS, async () => {
      const { metafile } = await buildBundles(dir, true);
      writeFileSync(meta, JSON.stringify(metafile));
    });
    return { dir, metafile: JSON.parse(readFileSync(meta, "utf8")) as Metafile };
  })();
  return built;
}

/** The bundle built from `source` (an entry of scripts/build.ts: `src/proxy/main.ts` is `gateway.js`). */
export async function bundleOf(source: string): Promise<string> {
  const name = Object.entries(ENTRIES).find(([, entry]) => entry === source)?.[0];
  if (name === undefined) throw new Error(`${source} is no entry of scripts/build.ts`);
  return join((await builtBundles()).dir, `${name}.js`);
}
