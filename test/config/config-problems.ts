import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { ConfigError, loadConfig } from "../../src/config/load.js";

// in the run's temporary folder, which the run removes (support/global-setup.ts)
let dir: string | undefined;

/** What loading `text` as the deployment file refuses (a ConfigError's message), or "" when it loads. */
export function configProblems(text: string): string {
  dir ??= mkdtempSync(join(tmpdir(), "config-problems-"));
  const path = join(dir, `c${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(path, text);
  try {
    loadConfig(endpointsByLabel, { GATEWAY_CONFIG: path });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  return "";
}
