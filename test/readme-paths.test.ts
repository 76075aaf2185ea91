import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./registry/helpers.js";

// The README's request-flow diagram is how a newcomer finds the code: each file it names by a path must
// be there, under src/ as the diagram says, or from the repository's root (generated/, dist/).
const readme = readFileSync(join(ROOT, "README.md"), "utf8");
const section = readme.split("## How a request flows")[1]?.split("\n## ")[0] ?? "";
const diagram = section.split("```")[1] ?? "";
const named = [...new Set(diagram.match(/[\w.-]+\/[\w./-]+\.(?:ts|js)/g) ?? [])];
// every file the section names, with or without a folder: a bare `group.ts` is no path a reader can open
const mentioned = [...new Set(section.match(/(?<![\w./-])[\w.-]+(?:\/[\w.-]+)*\.(?:ts|js)\b/g) ?? [])];

describe("the README's request-flow diagram", () => {
  it("names the files a request passes", () => {
    expect(named.length).toBeGreaterThan(40);
    expect(named).toContain("pipeline/http.ts");
    expect(named).toContain("cache/relay-cached.ts");
    // each runs for requests, and was named nowhere in it (an operator audit): check.ts reads member names
    // through member-case.ts, a WebSocket asks a node at the head through head-reads.ts, every attempt is
    // counted in upstream-counts.ts, every request's series are kept in tables.ts, and a traced one sampled
    for (const file of [
      "jsonrpc/member-case.ts",
      "ws/head-reads.ts",
      "upstream/upstream-counts.ts",
      "metrics/tables.ts",
      "tracing/label-sampler.ts",
    ])
      expect(diagram).toContain(file);
  });

  it("names only files that exist, each by its path", () => {
    const built = (path: string) => path.startsWith("dist/");
    expect(mentioned.length).toBeGreaterThan(named.length);
    const missing = mentioned.filter(
      (path) => !built(path) && !existsSync(join(ROOT, "src", path)) && !existsSync(join(ROOT, path)),
    );
    expect(missing).toEqual([]);
  });
});
