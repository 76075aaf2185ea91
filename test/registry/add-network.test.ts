import { execFile } from "node:child_process";
import { appendFileSync, cpSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { matchRoute } from "../../src/registry/match-route.js";
import type { Endpoint } from "../../src/registry/types.js";
import { ROOT, runCodegen } from "./helpers.js";

describe("a network added by YAML alone", () => {
  let endpoints: ReadonlyMap<string, Endpoint>;

  beforeAll(async () => {
    const out = mkdtempSync(join(tmpdir(), "registry-added-"));
    const run = await runCodegen([
      "--registry",
      "test/fixtures/registry/invented-network.yaml",
      "--out",
      out,
    ]);
    expect(run.stderr).toBe("");
    ({ endpointsByLabel: endpoints } = await import(pathToFileURL(join(out, "endpoints.ts")).href));
  });

  it("resolves its labels with their flags", () => {
    expect([...endpoints.keys()]).toEqual(["zph", "zph-devnet", "zph-archive"]);
    expect(endpoints.get("zph")).toMatchObject({
      family: "mixed",
      websocket: true,
      public: true,
      nodeClass: "full",
    });
    expect(endpoints.get("zph-devnet")).toMatchObject({
      environment: "devnet",
      nodeClass: "full",
      websocket: false,
      public: false,
    });
    expect(endpoints.get("zph-archive")).toMatchObject({
      nodeClass: "archive",
      websocket: false,
      public: false,
    });
  });

  it("orders its mounts longest path first", () => {
    expect(endpoints.get("zph")?.mounts.map((m) => m.path)).toEqual(["/rpc", "/"]);
  });

  it("gets a method table and an envelope validator from codegen", () => {
    const rpc = endpoints.get("zph")?.mounts[0]?.policy.jsonrpc;
    expect(rpc?.methods.get("zph_height")).toBe("shared");
    expect(rpc?.methods.get("zph_trace")).toBe("dedicated");
    expect(rpc?.methods.get("zph_watch")).toBe("websocket");
    expect(rpc?.methods.has("zph_admin_reset")).toBe(false);
    expect(rpc?.validate({ jsonrpc: "2.0", id: 1, method: "zph_height", params: {} })).toBe(true);
    expect(rpc?.validate({ jsonrpc: "2.0", id: 1, method: "zph_height", params: [] })).toBe(false);
    expect(rpc?.batch).toBe(false);
  });

  it("gets compiled REST routes, streams marked", () => {
    const routes = endpoints.get("zph")?.mounts[1]?.policy.routes;
    if (routes === undefined) throw new Error("no routes");
    expect(matchRoute(routes, "GET", ["v1", "accounts", "abc"])).toEqual({
      kind: "match",
      access: "shared",
      shape: "/v1/accounts/{}",
    });
    expect(matchRoute(routes, "GET", ["v1", "stream", "blocks"])).toMatchObject({
      kind: "match",
      access: "stream",
    });
    expect(matchRoute(routes, "DELETE", ["v1", "submit"])).toEqual({
      kind: "method-not-allowed",
      allow: ["POST"],
    });
    expect(matchRoute(routes, "GET", ["v1", "admin"])).toEqual({ kind: "not-found" });
  });

  it("carries its head call and dedicated-only interfaces", () => {
    const zph = endpoints.get("zph");
    expect(zph?.head).toEqual({
      kind: "jsonrpc",
      method: "zph_height",
      params: {},
      field: ["result", "height"],
      encoding: "integer",
    });
    expect(zph?.dedicatedOnly).toEqual([{ name: "Zephyr full index", paths: ["/v1/index"] }]);
  });
});

// Polygon PoS as a maintainer would add it: an EVM network on the existing `ethereum` interface, with a
// mainnet and a named testnet (Amoy), appended to the real registry.
const POLYGON = `
  - code: pol
    name: Polygon PoS
    blockTime: 2
    mounts: [{ path: /, interface: ethereum }]
    testnets: [amoy]
    endpoints:
      - { label: pol, environment: mainnet, nodeClass: full, chainId: 137 }
      - { label: pol-amoy, environment: amoy, nodeClass: full, chainId: 80002 }
`;

/** What the copy leaves out: git's files, the installed packages (linked instead), build and run output. */
const NOT_COPIED = new Set([".git", "node_modules", "dist", ".data", "results"]);

/**
 * `npm run check` is codegen:check, typecheck, lint and test. The copy runs the first three whole, and of
 * the tests those that depend on the registry's contents: test/registry (which reads networks.yaml and
 * the generated tables over every label, network and interface) and test/dataplane/conformance.test.ts
 * (every label of the generated table end to end). Every other test names the labels it uses (eth, bsc,
 * trx...), which appending a network leaves as they were, so they pass in the copy as they pass here;
 * running them too would take this test from ~20 s to over a minute. This file is excluded in the copy,
 * which would otherwise run it again inside itself.
 */
const CHECK_IN_COPY: readonly (readonly string[])[] = [
  ["run", "codegen:check"],
  ["run", "typecheck"],
  ["run", "lint"],
  [
    "exec",
    "--",
    "vitest",
    "run",
    "test/registry",
    "test/dataplane/conformance.test.ts",
    "--exclude",
    `test/registry/${basename(import.meta.filename)}`,
  ],
];

describe("a network with a named testnet, added to the real registry by YAML alone", () => {
  const dir = mkdtempSync(join(tmpdir(), "registry-add-pol-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("passes npm run codegen, then npm run check's registry-dependent parts, with no other edit", async () => {
    cpSync(ROOT, dir, { recursive: true, filter: (source) => !NOT_COPIED.has(basename(source)) });
    symlinkSync(realpathSync(join(ROOT, "node_modules")), join(dir, "node_modules"), "dir");
    appendFileSync(join(dir, "registry/networks.yaml"), POLYGON);

    await npm(dir, ["run", "codegen"]);
    const { endpointsByLabel } = (await import(pathToFileURL(join(dir, "generated/endpoints.ts")).href)) as {
      endpointsByLabel: ReadonlyMap<string, Endpoint>;
    };
    expect(endpointsByLabel.get("pol")).toMatchObject({ environment: "mainnet", chainId: 137 });
    expect(endpointsByLabel.get("pol-amoy")).toMatchObject({
      code: "pol",
      environment: "amoy",
      nodeClass: "full",
      chainId: 80002,
      family: "jsonrpc",
    });
    for (const args of CHECK_IN_COPY) await npm(dir, args);
  }, 240_000);
});

/** Runs npm in the copy, as a maintainer would there; rejects with the command's output when it fails. */
function npm(cwd: string, args: readonly string[]): Promise<void> {
  // The outer vitest's variables would tell the inner one it is a worker; drop them.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("VITEST")));
  return new Promise((resolve, reject) =>
    execFile("npm", ["--silent", ...args], { cwd, env, maxBuffer: 64 << 20 }, (error, stdout, stderr) =>
      error
        ? reject(
            new Error(
              `npm ${args.join(" ")} failed in ${cwd}:\n${stdout.slice(-4000)}\n${stderr.slice(-4000)}`,
            ),
          )
        : resolve(),
    ),
  );
}
