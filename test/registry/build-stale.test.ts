import {
  appendFileSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { generatedIsCurrent } from "../../scripts/build.js";
import { ROOT } from "./helpers.js";

// `npm run build` (and so `npm start`) refuses to bundle tables made from another registry than the one in
// the tree: an edit to the YAML without `npm run codegen` was served as the old tables, without a word.
describe("the build checks generated/ against the registry", () => {
  const dir = mkdtempSync(join(tmpdir(), "build-stale-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  for (const folder of ["registry", "generated"]) mkdirSync(join(dir, folder));
  copyFileSync(join(ROOT, "registry/networks.yaml"), join(dir, "registry/networks.yaml"));
  copyFileSync(join(ROOT, "generated/endpoints.ts"), join(dir, "generated/endpoints.ts"));
  copyFileSync(join(ROOT, "generated/config-validator.js"), join(dir, "generated/config-validator.js"));

  it("the tree as committed is current", () => {
    expect(generatedIsCurrent(ROOT)).toBe(true);
    expect(generatedIsCurrent(dir)).toBe(true);
  });

  it("a config validator made from another schema is not", () => {
    const file = join(dir, "generated/config-validator.js");
    const made = readFileSync(file, "utf8");
    writeFileSync(
      file,
      made.replace(/sha256 of its schema [0-9a-f]{64}/, `sha256 of its schema ${"0".repeat(64)}`),
    );
    expect(generatedIsCurrent(dir)).toBe(false);
    writeFileSync(file, made);
    expect(generatedIsCurrent(dir)).toBe(true);
  });

  it("a registry edited after codegen is not", () => {
    appendFileSync(join(dir, "registry/networks.yaml"), "# an edit\n");
    expect(generatedIsCurrent(dir)).toBe(false);
  });
});
