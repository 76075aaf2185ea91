import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ROOT } from "./helpers.js";

const registry = parse(readFileSync(join(ROOT, "registry/networks.yaml"), "utf8")) as {
  networks: { code: string; name: string; endpoints: { label: string }[] }[];
  interfaces: Record<string, unknown>;
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith(".ts")
        ? [join(dir, entry.name)]
        : [],
  );
}

describe("src/ knows interface families, never a network", () => {
  const words = new Set<string>([
    ...registry.networks.flatMap((n) => [n.code, ...n.endpoints.map((e) => e.label)]),
    ...Object.keys(registry.interfaces),
  ]);

  it("names no network code, label or interface id in a string literal", () => {
    const hits: string[] = [];
    for (const file of sourceFiles(join(ROOT, "src"))) {
      const text = readFileSync(file, "utf8");
      for (const [, literal] of text.matchAll(/["'`]([a-z0-9+-]+)["'`]/g)) {
        if (words.has(literal as string)) hits.push(`${file.slice(ROOT.length)}: "${literal}"`);
      }
    }
    expect(hits).toEqual([]);
  });

  it("names no network by its display name", () => {
    const hits: string[] = [];
    for (const file of sourceFiles(join(ROOT, "src"))) {
      const text = readFileSync(file, "utf8");
      for (const { name } of registry.networks)
        if (new RegExp(`\\b${name}\\b`).test(text)) hits.push(`${file}: ${name}`);
    }
    expect(hits).toEqual([]);
  });
});
