import { execFile } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../registry/helpers.js";
import { bundleOf } from "../support/bundles.js";

// `--check-config` as an operator runs it before a reload: a problem in a variable is one of the listed
// problems, naming the variable, with exit 2, never a stack trace.

async function checkConfig(env: NodeJS.ProcessEnv): Promise<{ code: number; out: string; err: string }> {
  const bundle = await bundleOf("src/proxy/main.ts");
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bundle, "--check-config"],
      { cwd: ROOT, env: { ...process.env, GATEWAY_CONFIG: "", ...env } },
      (error, out, err) => resolve({ code: error ? Number(error.code ?? 1) : 0, out, err }),
    );
  });
}

describe("--check-config with settings from the environment", () => {
  it("GATEWAY_UPSTREAM_ETH=not-a-url: exit 2, the variable named, no stack trace", async () => {
    const { code, err } = await checkConfig({ GATEWAY_UPSTREAM_ETH: "not-a-url" });
    expect(code).toBe(2);
    expect(err).toMatch(/^invalid configuration:\nGATEWAY_UPSTREAM_ETH: \/upstreams\/eth\/0 must match/);
    expect(err).not.toMatch(/\n\s+at /);
  });

  it("GATEWAY_LOG_LEVEL=verbose: exit 2, with the levels it may be", async () => {
    const { code, err } = await checkConfig({ GATEWAY_LOG_LEVEL: "verbose" });
    expect(code).toBe(2);
    expect(err).toContain(
      "GATEWAY_LOG_LEVEL: /log/level must be equal to one of the allowed values: debug, info, warn, error, silent",
    );
  });

  it("valid variables over the embedded default: exit 0", async () => {
    const { code, out } = await checkConfig({
      GATEWAY_UPSTREAM_DOT: "http://127.0.0.1:9933",
      GATEWAY_PORT: "0",
    });
    expect(code).toBe(0);
    expect(out).toContain("deploy/local.yaml (embedded): valid (1 labels with upstreams");
  });
});

describe("the proxy's command line", () => {
  it("`node-gateway admin …` runs the operator CLI, as the package's node-gateway command (dist/gateway.js)", async () => {
    const bundle = await bundleOf("src/proxy/main.ts");
    const { code, out } = await new Promise<{ code: number; out: string }>((resolve) => {
      execFile(process.execPath, [bundle, "admin", "--help"], { cwd: ROOT }, (error, out) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, out }),
      );
    });
    expect(code).toBe(0);
    expect(out).toMatch(/^usage: node-gateway admin <command>/);
  });

  it("`node-gateway --config <file> admin …` takes the config as the operator CLI's, as `admin --config <file>` does", async () => {
    const missing = join(tmpdir(), "no-such-admin-deployment.yaml");
    const bundle = await bundleOf("src/proxy/main.ts");
    for (const args of [
      ["--config", missing, "admin", "accounts", "list"],
      [`--config=${missing}`, "admin", "accounts", "list"],
      ["admin", "--config", missing, "accounts", "list"],
    ]) {
      const { code, err } = await new Promise<{ code: number; err: string }>((resolve) => {
        execFile(process.execPath, [bundle, ...args], { cwd: ROOT }, (error, _out, err) =>
          resolve({ code: error ? Number(error.code ?? 1) : 0, err }),
        );
      });
      expect(code, args.join(" ")).toBe(2);
      expect(err, args.join(" ")).toMatch(
        /^error INVALID_CONFIG: invalid configuration: .*no-such-admin-deployment\.yaml: ENOENT/,
      );
    }
  });
});
