import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../registry/helpers.js";
import { bundleOf } from "../support/bundles.js";

// The control plane takes the proxy's command line: a flag it does not know is refused with its usage
// and exit 2 (it ignored its arguments and started on the embedded default, making .data/gateway.sqlite
// where it ran), and --config names the file, as GATEWAY_CONFIG does.

async function controlPlane(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const bundle = await bundleOf("src/control/main.ts");
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bundle, ...args],
      { cwd: ROOT, env: { ...process.env, GATEWAY_CONFIG: "" }, timeout: 20_000 },
      (error, out, err) => resolve({ code: error ? Number(error.code ?? 1) : 0, out, err }),
    );
  });
}

describe("the control plane's command line", () => {
  it("an unknown flag: its usage and exit 2; --help: the usage and --version its version, exit 0", async () => {
    const refused = await controlPlane(["--bogus-flag"]);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain("Unknown option '--bogus-flag'");
    expect(refused.err).toContain("usage: node dist/control-plane.js [--config PATH]");
    const help = await controlPlane(["--help"]);
    expect(help.code).toBe(0);
    expect(help.out).toContain("--config PATH");
    const version = await controlPlane(["--version"]);
    expect(version.code).toBe(0);
    expect(version.out).toMatch(/^node-gateway-control-plane \d+\.\d+\.\d+ \(registry sha256:/);
  });

  it("--config names the file it reads: an invalid one is refused, naming it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "control-args-"));
    try {
      const file = join(dir, "broken.yaml");
      writeFileSync(file, "listen: { port: not-a-port }\n");
      const { code, err } = await controlPlane(["--config", file]);
      expect(code).toBe(2);
      expect(err).toContain("broken.yaml");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
