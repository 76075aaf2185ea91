import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { configSchema } from "../src/config/schema.js";

// Four bundles, one per entry point. dist/gateway.js is the proxy: node:http, ws, undici, the generated
// tables and the reader of the account store's grants, nothing of the control plane (a test reads the
// build's metafile to keep it so). dist/control-plane.js is the control plane; dist/admin.js the operator
// CLI, so that a deployment of dist/ has it without tsx; dist/demo.js is `npm start`, the proxy and the
// control plane in one process with the local nodes.
// The first three are package.json's bin entries: their sources begin with `#!/usr/bin/env node`, which
// esbuild keeps as the bundle's first line (before the banner) and for which it marks the file executable,
// so that an installed `node-gateway` runs as a command (test/proxy/bin-entries.test.ts). Not the banner's
// job: esbuild writes a banner after an entry's own `#!` line (two are a syntax error), and marks a file
// executable only for the entry's.
export const ENTRIES = {
  gateway: "src/proxy/main.ts",
  "control-plane": "src/control/main.ts",
  admin: "src/control/cli.ts",
  demo: "src/dev/main.ts",
};

/** The commit the bundles are built from: `git rev-parse HEAD`, or `unknown` outside a checkout. */
export function buildCommit(): string {
  const git = spawnSync("git", ["rev-parse", "--short=12", "HEAD"], { encoding: "utf8" });
  return git.status === 0 ? git.stdout.trim() : "unknown";
}

/** Builds the four bundles into `outdir` (a test builds its own, below the project's node_modules). */
export async function buildBundles(outdir = "dist", metafile = false) {
  const result = await build({
    entryPoints: ENTRIES,
    outdir,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "esm",
    sourcemap: true,
    minifySyntax: true,
    // esbuild's default, written out: `asciiOnly` below counts on the code being escaped
    charset: "ascii",
    metafile,
    // A native addon stays in node_modules: its loader (bindings) finds the .node file from its own
    // package's path and reads __filename, neither of which exists inside an ES module bundle.
    external: ["better-sqlite3"],
    // gateway_build_info's commit (metrics/process-info.ts): the tree's at build time, when it is a checkout
    define: { "process.env.GATEWAY_BUILD_COMMIT": JSON.stringify(buildCommit()) },
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
    logLevel: "warning",
  });
  for (const name of Object.keys(ENTRIES)) asciiOnly(join(outdir, `${name}.js`));
  return result;
}

const NON_ASCII = /[\u0080-\uffff]/g;

/**
 * esbuild escapes every non-ASCII character of the code (`charset: "ascii"`), but not those of the comments
 * it keeps; one arrow in a kept comment made V8 hold the whole 2.9 MB source of dist/gateway.js at two
 * bytes per character, 5.8 MB of every process's heap (a heap snapshot's largest object;
 * docs/performance.md). Each is replaced here by `?`, one character for one, so that no column moves and
 * the source map stays exact. test/proxy/split.test.ts checks every bundle, test/binary/ the binary's.
 */
export function asciiOnly(file: string): void {
  const text = readFileSync(file, "utf8");
  if (text.search(NON_ASCII) < 0) return;
  writeFileSync(file, text.replace(NON_ASCII, "?"));
}

/**
 * Whether generated/ was made from the registry and the config schema as they are: its stamps are the
 * sha256 of registry/networks.yaml and of src/config/schema.ts's schema. A maintainer who edited the YAML
 * and ran `npm start` got the old tables served without a word.
 */
export function generatedIsCurrent(root = "."): boolean {
  const registry = readFileSync(join(root, "registry/networks.yaml"));
  const stamp = /registryStamp = "sha256:([0-9a-f]{64})"/.exec(
    readFileSync(join(root, "generated/endpoints.ts"), "utf8"),
  );
  const validator = /sha256 of its schema ([0-9a-f]{64})/.exec(
    readFileSync(join(root, "generated/config-validator.js"), "utf8"),
  );
  return (
    stamp?.[1] === createHash("sha256").update(registry).digest("hex") &&
    validator?.[1] === createHash("sha256").update(JSON.stringify(configSchema)).digest("hex")
  );
}

/** Stops a build of bundles or the binary from generated/ tables older than their sources. */
export function refuseStaleGenerated(): void {
  if (generatedIsCurrent()) return;
  process.stderr.write(
    "registry/networks.yaml or src/config/schema.ts has changed since generated/ was made from it: run `npm run codegen` first (the build would serve the old tables)\n",
  );
  process.exit(1);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  refuseStaleGenerated();
  await buildBundles();
}
