import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ROOT, runCodegen } from "./helpers.js";

describe("codegen:check", () => {
  const made: string[] = [];
  /** A new folder for one test, removed after it. */
  const scratch = (prefix: string) => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("passes on the committed generated/", async () => {
    const run = await runCodegen(["--check"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
  });

  it("fails after a hand edit to generated/, naming the file and line", async () => {
    const out = scratch("codegen-edited-");
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

  it("fails on a file that the registry does not produce", async () => {
    const out = scratch("codegen-extra-");
    cpSync(join(ROOT, "generated"), out, { recursive: true });
    writeFileSync(join(out, "stray.ts"), "export {};\n");
    const run = await runCodegen(["--check", "--out", out]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("stray.ts is not produced by the registry");
  });

  it("fails after a bad edit to the registry, pointing at the line", async () => {
    const dir = scratch("codegen-bad-registry-");
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
