import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { getAsset, isSea } from "node:sea";
import { registryStamp } from "../generated/endpoints.js";
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

/** What `--version` prints for each of the gateway's programs: its version and the registry it carries. */
export function versionLine(program: string): string {
  return `${program} ${gatewayVersion()} (registry ${registryStamp}, Node ${process.version})`;
}

/**
 * How an operator runs the operator CLI that came with this gateway, for a message that tells them to: the
 * single executable's `admin` command, dist/admin.js beside a bundle, else npm in the source tree.
 */
export function adminCommand(): string {
  if (isSea()) return `${process.execPath} admin`;
  const script = process.argv[1] ?? "";
  const beside = join(dirname(script), "admin.js");
  return script.endsWith(".js") && existsSync(beside) ? `node ${beside}` : "npm run admin --";
}
