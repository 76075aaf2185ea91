import { execFile } from "node:child_process";
import {
  appendFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { networkCodes, endpointsByLabel as registryEndpoints } from "../../generated/endpoints.js";
import { matchRoute } from "../../src/registry/match-route.js";
import type { Endpoint } from "../../src/registry/types.js";
import { ROOT, runCodegen } from "./helpers.js";

// The two suites below share nothing (each its own folder) and each mostly waits on child processes: they run
// side by side (describe.concurrent), the fixture's codegen beside the copy's.
describe.concurrent("a network added by YAML alone", () => {
  let endpoints: ReadonlyMap<string, Endpoint>;
  const out = mkdtempSync(join(tmpdir(), "registry-added-"));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  beforeAll(async () => {
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

// An EVM network as a maintainer would add it: on the existing `ethereum` interface, with a mainnet and a
// named testnet, appended to the real registry. The first of these the registry does not have yet, so
// that a maintainer who adds Polygon for real does not break this test.
const CANDIDATES = [
  { code: "pol", name: "Polygon PoS", testnet: "amoy", chainIds: [137, 80002] },
  { code: "arb", name: "Arbitrum One", testnet: "sepolia", chainIds: [42161, 421614] },
  { code: "linea", name: "Linea", testnet: "sepolia", chainIds: [59144, 59141] },
] as const;
const usedCodes = new Set<string>(networkCodes);
const usedChainIds = new Set([...registryEndpoints.values()].map((e) => e.chainId));
const ADDED = CANDIDATES.find(
  (c) => !usedCodes.has(c.code) && !c.chainIds.some((id) => usedChainIds.has(id)),
);
if (ADDED === undefined)
  throw new Error("every candidate network is in the registry: add another to CANDIDATES");
const ADDED_YAML = `
  - code: ${ADDED.code}
    name: ${ADDED.name}
    blockTime: 2
    mounts: [{ path: /, interface: ethereum }]
    testnets: [${ADDED.testnet}]
    endpoints:
      - { label: ${ADDED.code}, environment: mainnet, nodeClass: full, chainId: ${ADDED.chainIds[0]} }
      - { label: ${ADDED.code}-${ADDED.testnet}, environment: ${ADDED.testnet}, nodeClass: full, chainId: ${ADDED.chainIds[1]} }
`;

/** What the copy leaves out: git's files, the installed packages (linked instead), build, run and test output. */
const NOT_COPIED = new Set([".git", "node_modules", "dist", ".data", "results", "artifacts"]);

/**
 * The folders `npm run typecheck` covers in the copy: tsconfig.json's `include` less test/ and bench/. Those
 * two use the generated tables only as values (`new Set(networkCodes)` as a `ReadonlySet<string>`,
 * `endpointsByLabel` as a `ReadonlyMap<string, Endpoint>`) and never name the generated `NetworkCode` and
 * `Label` unions (the last test below holds them to that), so a network added to the registry cannot change
 * their types; they are type-checked by `npm run typecheck` in the repository. Checking them again in the
 * copy took 17 s of this test's 40, for the SDKs' type declarations.
 */
const TYPECHECKED_IN_COPY = ["src", "codegen", "generated", "scripts"];

/**
 * What `npm run lint` covers in the copy: the files a network added to the registry changes that biome reads
 * (generated/; networks.yaml and docs/compute-units.md it leaves out). Biome lints and formats file by file
 * here (biome.json turns on no rule of its `project` domain, the only ones that read other files: an import
 * of a name that does not exist or is private passes its lint), so every other file lints in the copy as it
 * does in the repository, where `npm run lint` checks it; linting the whole copy took 5 s of CPU.
 */
const LINTED_IN_COPY = ["generated"];

/**
 * The tests that read networks.yaml or the generated tables over every label, network and interface:
 * test/registry and test/dataplane/conformance.test.ts (every label of the generated table end to end), less
 * these. This file, which would run itself again inside itself; codegen-check.test.ts, whose first test is
 * the codegen:check this test runs in the copy anyway, and whose others edit copies of generated/ or append a
 * broken network, whatever the registry holds; invalid-registry.test.ts, which edits a fixture registry, not
 * networks.yaml. Every other test names the labels it uses (eth, bsc, trx...), which appending a network
 * leaves as they were, so they pass in the copy as they pass here.
 */
const NOT_REGISTRY_DEPENDENT = new Set([
  basename(import.meta.filename),
  "codegen-check.test.ts",
  "invalid-registry.test.ts",
]);

/**
 * `npm run check` is codegen:check, typecheck, lint and test. In a copy of the repository with that network
 * appended to its registry, this runs its codegen, then each of those, as far as the registry can change its
 * outcome: codegen:check whole, the lint of LINTED_IN_COPY, the typecheck of TYPECHECKED_IN_COPY, and the
 * registry-dependent tests. Each runs as its npm script does, without npm's own start-up. The four only read the copy, so they
 * run at once, after the codegen; each is awaited to its end, and the first that failed, in that order, is reported.
 */
describe.concurrent("a network with a named testnet, added to the real registry by YAML alone", () => {
  const dir = mkdtempSync(join(tmpdir(), "registry-add-evm-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("passes npm run codegen, then npm run check's registry-dependent parts, with no other edit", async () => {
    cpSync(ROOT, dir, { recursive: true, filter: (source) => !NOT_COPIED.has(basename(source)) });
    symlinkSync(realpathSync(join(ROOT, "node_modules")), join(dir, "node_modules"), "dir");
    appendFileSync(join(dir, "registry/networks.yaml"), ADDED_YAML);

    const codegen = await runCodegen([], dir);
    expect(codegen.stderr).toBe("");
    expect(codegen.code).toBe(0);
    const { endpointsByLabel } = (await import(pathToFileURL(join(dir, "generated/endpoints.ts")).href)) as {
      endpointsByLabel: ReadonlyMap<string, Endpoint>;
    };
    expect(endpointsByLabel.get(ADDED.code)).toMatchObject({
      environment: "mainnet",
      chainId: ADDED.chainIds[0],
    });
    expect(endpointsByLabel.get(`${ADDED.code}-${ADDED.testnet}`)).toMatchObject({
      code: ADDED.code,
      environment: ADDED.testnet,
      nodeClass: "full",
      chainId: ADDED.chainIds[1],
      family: "jsonrpc",
    });

    // The typecheck's config goes in dist/, which the copy lacks (NOT_COPIED) and biome.json leaves out, so
    // the lint, running beside it, reads the copy as the repository is (paths relative to dist/).
    mkdirSync(join(dir, "dist"));
    writeFileSync(
      join(dir, "dist/tsconfig.registry.json"),
      JSON.stringify({ extends: "../tsconfig.json", include: TYPECHECKED_IN_COPY.map((f) => `../${f}`) }),
    );
    const tests = readdirSync(join(dir, "test/registry"))
      .filter((name) => name.endsWith(".test.ts") && !NOT_REGISTRY_DEPENDENT.has(name))
      .map((name) => `test/registry/${name}`);
    expect(tests).toContain("test/registry/conformance.test.ts");
    const [check, ...others] = await Promise.allSettled([
      runCodegen(["--check"], dir),
      node(dir, ["node_modules/@biomejs/biome/bin/biome", "check", ...LINTED_IN_COPY]),
      node(dir, ["node_modules/typescript/bin/tsc", "-p", "dist/tsconfig.registry.json", "--noEmit"]),
      node(dir, [
        "node_modules/vitest/vitest.mjs",
        "run",
        ...tests,
        "test/dataplane/conformance.test.ts",
        // the files are few and CPU-bound: one worker, beside the outer run's; and one module graph for the
        // ten (no isolation), which halves the run: they only read tables and start and close their servers,
        // and run isolated in the outer run
        "--maxWorkers=1",
        "--no-isolate",
      ]),
    ]);
    // in npm run check's order: codegen:check (whose run never rejects), lint, typecheck, tests
    if (check.status === "rejected") throw check.reason;
    expect(check.value.stderr).toBe("");
    expect(check.value.code).toBe(0);
    for (const other of others) if (other.status === "rejected") throw other.reason;
  }, 240_000);

  it("leaves test/ and bench/ nothing a new network could change the types of", () => {
    // the generated unions, imported by name or taken from the tables' own types
    const unions =
      /import[^;]*\b(NetworkCode|Label)\b[^;]*generated\/endpoints|typeof (networkCodes|endpointsByLabel)\b/;
    const named: string[] = [];
    const walk = (folder: string): void => {
      for (const entry of readdirSync(join(ROOT, folder), { withFileTypes: true })) {
        const path = join(folder, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (path.endsWith(".ts") && unions.test(readFileSync(join(ROOT, path), "utf8")))
          named.push(path);
      }
    };
    for (const folder of ["test", "bench"]) walk(folder);
    expect(named).toEqual([]);
  });
});

/** Runs `node args` in the copy, as its npm script would; rejects with the command's output when it fails. */
function node(cwd: string, args: readonly string[]): Promise<void> {
  // The outer vitest's variables would tell the inner one it is a worker; drop them.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("VITEST")));
  return new Promise((resolve, reject) =>
    execFile(process.execPath, args, { cwd, env, maxBuffer: 64 << 20 }, (error, stdout, stderr) =>
      error
        ? reject(
            new Error(
              `${args.slice(0, 2).join(" ")} failed in ${cwd}:\n${stdout.slice(-4000)}\n${stderr.slice(-4000)}`,
            ),
          )
        : resolve(),
    ),
  );
}
