import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, type TestContext } from "vitest";
import { parse } from "yaml";
import { ROOT, runCodegen } from "./helpers.js";

// Each test runs the codegen CLI once, in a folder of its own, and mostly waits on it: the four run at once.
// Four codegens at once share the CPU, each taking longer than one alone (the default 20 s deadline failed
// one alone on a loaded two-core machine): a longer deadline, which costs time only when a test fails.
describe.concurrent("codegen:check", { timeout: 90_000 }, () => {
  /**
   * A new folder for one test, removed when that test ends, not when another does: its own context's
   * onTestFinished (the global one cannot tell concurrent tests apart).
   */
  const scratch = (prefix: string, onTestFinished: TestContext["onTestFinished"]) => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  };

  it("passes on the committed generated/", async () => {
    const run = await runCodegen(["--check"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
  });

  it("fails after a hand edit to generated/, naming the file and line", async ({ onTestFinished }) => {
    const out = scratch("codegen-edited-", onTestFinished);
    cpSync(join(ROOT, "generated"), out, { recursive: true });
    const file = join(out, "endpoints.ts");
    writeFileSync(file, readFileSync(file, "utf8").replace('"eth-archive"', '"eth-archiv"'));
    const run = await runCodegen(["--check", "--out", out]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /endpoints\.ts differs from what registry\/networks\.yaml produces \(first at line \d+\)/,
    );
    expect(run.stderr).toContain("Run `npm run codegen`");
  });

  it("fails on a file that the registry does not produce", async ({ onTestFinished }) => {
    const out = scratch("codegen-extra-", onTestFinished);
    cpSync(join(ROOT, "generated"), out, { recursive: true });
    writeFileSync(join(out, "stray.ts"), "export {};\n");
    const run = await runCodegen(["--check", "--out", out]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("stray.ts is not produced by the registry");
  });

  it("fails after a bad edit to the registry, pointing at the line", async ({ onTestFinished }) => {
    const dir = scratch("codegen-bad-registry-", onTestFinished);
    const registry = join(dir, "networks.yaml");
    cpSync(join(ROOT, "registry/networks.yaml"), registry);
    appendFileSync(
      registry,
      "  - { code: eth, name: Again, mounts: [{ path: /, interface: ethereum }], endpoints: [] }\n",
    );
    const run = await runCodegen(["--check", "--registry", registry]);
    // the appended network comes after every network the registry has, however many that is
    const appended = (parse(readFileSync(registry, "utf8")) as { networks: unknown[] }).networks.length - 1;
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(
        `networks\\.yaml:\\d+:\\d+ networks\\[${appended}\\]\\.endpoints: must NOT have fewer than 1 items`,
      ),
    );
  });
});
