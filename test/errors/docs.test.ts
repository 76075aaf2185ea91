import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ERRORS } from "../../src/errors/table.js";
import { ROOT } from "../registry/helpers.js";

describe("docs/errors.md and the error table agree", () => {
  const rows = readFileSync(join(ROOT, "docs/errors.md"), "utf8")
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .map((line) => line.split("|").map((cell) => cell.trim()));
  const documented = new Map(rows.map((cells) => [cells[1]?.replace(/`/g, ""), cells]));

  it("documents every code, and no code that does not exist", () => {
    expect([...documented.keys()].sort()).toEqual(Object.keys(ERRORS).sort());
  });

  for (const [code, spec] of Object.entries(ERRORS)) {
    it(`${code}: HTTP ${spec.status}, JSON-RPC ${spec.rpc}, same message`, () => {
      const cells = documented.get(code);
      expect(cells?.[2]).toBe(String(spec.status));
      expect(cells?.[3]).toBe(String(spec.rpc));
      expect(cells?.[4]).toBe(spec.message);
      expect(cells?.[5]?.length ?? 0).toBeGreaterThan(10);
    });
  }
});
