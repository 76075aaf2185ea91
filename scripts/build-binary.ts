import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { build, type Plugin } from "esbuild";
// @ts-expect-error postject ships no types: inject(file, resource, data, { sentinelFuse }) is its API
import { inject } from "postject";
import { EMBEDDED_CONFIG } from "../src/embedded.js";
import { packageRoot } from "../src/package-root.js";
import { SQLITE_ADDON_ASSET } from "../src/store/sqlite-addon.js";
import { asciiOnly, buildCommit, refuseStaleGenerated } from "./build.js";

// `npm run build:binary`: dist/node-gateway, the proxy as one executable file (a Node.js single executable
// application, nodejs.org/api/single-executable-applications.html). It is this machine's `node`, stripped of
// its native symbols, with a blob injected into it: the proxy and the operator CLI (`node-gateway admin`,
// src/single-executable.ts) bundled into one CommonJS script (what a single executable runs) with V8's code
// cache, and as assets the embedded default config, package.json (its version) and better-sqlite3's native
// addon, which src/store/sqlite-addon.ts loads from the file itself.
// Everything comes from the npm registry: esbuild, postject and the addon npm ci built; nothing is downloaded.

const SEA_FUSE = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2";

/**
 * Modules the bundle's libraries ask for and do without: ws's native helpers (it falls back to JavaScript),
 * pg's native client (never chosen), better-sqlite3's addon finder (it gets its addon from sqlite-addon.ts).
 * In the executable, `require` reaches only Node's built-in modules, and warns on any other name.
 */
const OPTIONAL_MODULES = ["bufferutil", "utf-8-validate", "pg-native", "bindings"];

/** An esbuild plugin that makes each of `names` a module that throws when loaded, as a missing one would. */
function absent(names: readonly string[]): Plugin {
  const filter = new RegExp(`^(${names.map((n) => n.replace(/[-/]/g, "\\$&")).join("|")})$`);
  return {
    name: "absent",
    setup(bundle) {
      bundle.onResolve({ filter }, ({ path }) => ({ path, namespace: "absent" }));
      bundle.onLoad({ filter: /.*/, namespace: "absent" }, ({ path }) => ({
        contents: `throw new Error(${JSON.stringify(`${path} is not in the single executable`)});`,
        loader: "js",
      }));
    },
  };
}

/** Builds `out` (dist/node-gateway by default; relative to the package) and returns its path. */
export async function buildBinary(out = "dist/node-gateway"): Promise<string> {
  const root = packageRoot();
  const binary = resolve(root, out);
  // Its parts (the script, the blob) beside it, in a folder of their own.
  const work = `${binary}.parts`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const script = join(work, "gateway.cjs");
  await build({
    entryPoints: [join(root, "src/single-executable.ts")],
    outfile: script,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "cjs",
    minifySyntax: true,
    charset: "ascii",
    // the commit gateway_build_info names, as the bundles' (build.ts); it read "dev" in every binary
    define: { "process.env.GATEWAY_BUILD_COMMIT": JSON.stringify(buildCommit()) },
    plugins: [absent(OPTIONAL_MODULES)],
    // import.meta serves only the Node path (package-root.ts), never taken inside the executable.
    logOverride: { "empty-import-meta": "silent" },
    logLevel: "warning",
  });
  asciiOnly(script);
  const require = createRequire(import.meta.url);
  const addon = join(require.resolve("better-sqlite3/package.json"), "../build/Release/better_sqlite3.node");
  const config = join(work, "sea-config.json");
  writeFileSync(
    config,
    JSON.stringify({
      main: script,
      output: join(work, "gateway.blob"),
      disableExperimentalSEAWarning: true,
      useCodeCache: true,
      assets: {
        [EMBEDDED_CONFIG]: join(root, EMBEDDED_CONFIG),
        "package.json": join(root, "package.json"),
        [SQLITE_ADDON_ASSET]: addon,
      },
    }),
  );
  execFileSync(process.execPath, ["--experimental-sea-config", config], { stdio: "ignore" });
  rmSync(binary, { force: true });
  copyFileSync(process.execPath, binary);
  chmodSync(binary, 0o755);
  stripSymbols(binary);
  const blob = readFileSync(join(work, "gateway.blob"));
  await quietly(() => inject(binary, "NODE_SEA_BLOB", blob, { sentinelFuse: SEA_FUSE }));
  return binary;
}

/**
 * Runs `task` with console.warn held back, and prints what it said only if it fails. postject's ELF library
 * (LIEF, compiled to WebAssembly, which writes its stderr through console.warn) warns once per note section
 * it cannot name in a stripped node, `Can't find string offset for section name '.note.100'`, 44 times a
 * build; the binary is sound all the same (test/binary/ runs it).
 */
async function quietly<T>(task: () => Promise<T>): Promise<T> {
  const warn = console.warn;
  const held: unknown[][] = [];
  console.warn = (...args: unknown[]) => void held.push(args);
  try {
    return await task();
  } catch (error) {
    for (const args of held) warn(...args);
    throw error;
  } finally {
    console.warn = warn;
  }
}

/**
 * Node's native symbol table, which only a native debugger reads, is an eighth of the file (99 MB to 86 MB
 * for Node 20); JavaScript stack traces do not use it. Where binutils' `strip` is missing, the file keeps it.
 */
function stripSymbols(binary: string): void {
  try {
    execFileSync("strip", ["--strip-all", binary], { stdio: "ignore" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  refuseStaleGenerated();
  const binary = await buildBinary();
  process.stdout.write(`${binary}\n`);
}
