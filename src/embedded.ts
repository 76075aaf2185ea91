import { readFileSync } from "node:fs";
import { join } from "node:path";
import { getAsset, isSea } from "node:sea";
import { packageRoot } from "./package-root.js";

// What ships inside the gateway: read from the repository (or the npm package) when the gateway runs on
// Node, and from the single executable's own assets when it runs as `dist/node-gateway`
// (scripts/build-binary.ts puts them there).

/** The embedded default deployment: deploy/local.yaml. */
export const EMBEDDED_CONFIG = "deploy/local.yaml";

/** The embedded default deployment's text. */
export function embeddedConfigText(): string {
  return isSea()
    ? getAsset(EMBEDDED_CONFIG, "utf8")
    : readFileSync(join(packageRoot(), EMBEDDED_CONFIG), "utf8");
}

/** The gateway's version, from its package.json. */
export function gatewayVersion(): string {
  const text = isSea()
    ? getAsset("package.json", "utf8")
    : readFileSync(join(packageRoot(), "package.json"), "utf8");
  return (JSON.parse(text) as { version: string }).version;
}
