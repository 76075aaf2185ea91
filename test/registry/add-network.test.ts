import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { matchRoute } from "../../src/registry/match-route.js";
import type { Endpoint } from "../../src/registry/types.js";
import { runCodegen } from "./helpers.js";

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
    expect(matchRoute(routes, "GET", ["v1", "accounts", "abc"])).toEqual({ kind: "match", access: "shared" });
    expect(matchRoute(routes, "GET", ["v1", "stream", "blocks"])).toEqual({
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
