import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./registry/helpers.js";

const WORKLOAD = join(ROOT, "test/fixtures/v8/pretenuring-workload.mjs");

/** V8's pretenuring decisions while the workload runs, as `--trace-pretenuring-statistics` prints them. */
function pretenuringTrace(withGatewayFlags: boolean): Promise<string[]> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      ["--import", "tsx", "--trace-pretenuring-statistics", WORKLOAD],
      { cwd: ROOT, env: { ...process.env, GATEWAY_FLAGS: withGatewayFlags ? "1" : "" }, maxBuffer: 1 << 24 },
      (error, stdout) =>
        error ? reject(error) : resolve(stdout.split("\n").filter((line) => line.includes("pretenuring:"))),
    ),
  );
}

describe("the gateway's V8 settings", () => {
  it("turn allocation-site pretenuring off: V8 weighs the workload's sites by default, and not at all with them", async () => {
    const [plain, gateway] = await Promise.all([pretenuringTrace(false), pretenuringTrace(true)]);
    // By default V8 counts the sites' survivors and decides on them (whether to tenure depends on the
    // machine's load), so the check below can fail.
    expect(plain.length).toBeGreaterThan(0);
    expect(gateway).toEqual([]);
  });

  it("are set by the first module the gateway's entry imports, before any other module runs", () => {
    const source = readFileSync(join(ROOT, "src/main.ts"), "utf8");
    const firstImport = /^import\s[^;]*;/m.exec(source)?.[0];
    expect(firstImport).toBe('import "./v8-flags.js";');
  });
});
