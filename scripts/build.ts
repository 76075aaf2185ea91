import { build } from "esbuild";

// The proxy ships as one bundled file: node:http, ws, undici and the generated tables, nothing else.
await build({
  entryPoints: ["src/main.ts"],
  outfile: "dist/gateway.js",
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  sourcemap: true,
  minifySyntax: true,
  // A native addon stays in node_modules: its loader (bindings) finds the .node file from its own
  // package's path and reads __filename, neither of which exists inside an ES module bundle.
  external: ["better-sqlite3"],
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
  logLevel: "warning",
});
