import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
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

  it("the tree as committed is current", () => {
    expect(generatedIsCurrent(ROOT)).toBe(true);
    expect(generatedIsCurrent(dir)).toBe(true);
  });

  it("a registry edited after codegen is not", () => {
    appendFileSync(join(dir, "registry/networks.yaml"), "# an edit\n");
    expect(generatedIsCurrent(dir)).toBe(false);
  });
});
