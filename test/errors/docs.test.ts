import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ERRORS, type ErrorSpec } from "../../src/errors/table.js";
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

  it("every JSON-RPC number is in one of the blocks the table's header and the docs name", () => {
    const inBlock = (rpc: number) =>
      [-32700, -32600, -32601, -32603, -32005, -32000].includes(rpc) ||
      (rpc >= -32022 && rpc <= -32011) ||
      (rpc >= -32049 && rpc <= -32040);
    const numbers = Object.values(ERRORS).flatMap((spec) =>
      (spec as ErrorSpec).rpc === undefined ? [] : [(spec as ErrorSpec).rpc as number],
    );
    expect(numbers.filter((rpc) => !inBlock(rpc))).toEqual([]);
    const docs = readFileSync(join(ROOT, "docs/errors.md"), "utf8").replace(/\s+/g, " ");
    const header = readFileSync(join(ROOT, "src/errors/table.ts"), "utf8").replace(/\s+/g, " ");
    for (const block of ["-32011", "-32022", "-32040", "-32049", "-32005"]) {
      expect(docs).toContain(block);
      expect(header).toContain(block);
    }
  });

  for (const [code, spec] of Object.entries(ERRORS)) {
    const rpc = (spec as ErrorSpec).rpc;
    it(`${code}: HTTP ${spec.status}, JSON-RPC ${rpc ?? "none"}, same message`, () => {
      const cells = documented.get(code);
      expect(cells?.[2]).toBe(String(spec.status));
      expect(cells?.[3]).toBe(rpc === undefined ? "–" : String(rpc));
      expect(cells?.[4]).toBe(spec.message);
      expect(cells?.[5]?.length ?? 0).toBeGreaterThan(10);
    });
  }
});
