import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { matchRoute } from "../../src/registry/match-route.js";
import type { Endpoint, Mount } from "../../src/registry/types.js";
import { ROOT } from "./helpers.js";
import {
  answerRoute,
  deniedBy,
  type RefEndpoint,
  type RefRoute,
  readReference,
  samplePath,
} from "./reference.js";

interface SpecLabel {
  family: string;
  nodeClass: string;
  websocket?: true;
  public?: true;
}
const spec = parse(readFileSync(join(ROOT, "test/fixtures/spec-labels.yaml"), "utf8")) as {
  labels: Record<string, SpecLabel>;
  chainIds: Record<string, number>;
  withoutChainId: string[];
};

// The reference: registry/networks.yaml read by the test's own reader (reference.ts), not by codegen.
const reference = readReference(join(ROOT, "registry/networks.yaml"));
const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
const CHAIN_ID_METHOD = "eth_chainId";

function generatedOf(label: string): Endpoint {
  const endpoint = endpointsByLabel.get(label);
  if (endpoint === undefined) throw new Error(`generated/endpoints.ts has no label ${label}`);
  return endpoint;
}

describe("the spec's labels (test/fixtures/spec-labels.yaml)", () => {
  for (const [label, want] of Object.entries(spec.labels)) {
    it(`${label} is served with the spec's family, node class, WebSocket and public flags`, () => {
      expect(generatedOf(label)).toMatchObject({
        family: want.family,
        nodeClass: want.nodeClass,
        websocket: want.websocket ?? false,
        public: want.public ?? false,
      });
    });
  }

  it("the product's chain ids (test/fixtures/spec-labels.yaml) are the mainnets' ids", () => {
    for (const [code, id] of Object.entries(spec.chainIds)) expect(generatedOf(code).chainId, code).toBe(id);
  });

  it("a network the spec lists without a chain id declares none, and the registry says so", () => {
    for (const code of spec.withoutChainId) {
      const endpoints = reference.filter((e) => e.code === code);
      expect(endpoints.length, code).toBeGreaterThan(0);
      for (const endpoint of endpoints) {
        expect(endpoint.noChainId, endpoint.label).toBe(true);
        expect(generatedOf(endpoint.label).chainId, endpoint.label).toBeUndefined();
      }
    }
  });
});

describe("every label in the registry: the generated tables against the reference read from YAML", () => {
  it("the generated table holds exactly the registry's labels", () => {
    expect([...endpointsByLabel.keys()].sort()).toEqual(reference.map((e) => e.label).sort());
  });

  for (const ref of reference) {
    describe(ref.label, () => {
      it("has the registry's fields, mounts (longest path first), head call and dedicated-only paths", () => {
        const generated = generatedOf(ref.label);
        expect(generated).toMatchObject({
          label: ref.label,
          code: ref.code,
          networkName: ref.networkName,
          environment: ref.environment,
          nodeClass: ref.nodeClass,
          websocket: ref.websocket,
          public: ref.public,
          family: ref.family,
          dedicatedOnly: ref.dedicatedOnly,
        });
        expect(generated.chainId).toBe(ref.chainId);
        const byLength = [...ref.mounts].sort((a, b) => b.path.length - a.path.length);
        expect(generated.mounts.map((m) => [m.path, m.policy.family])).toEqual(
          byLength.map((m) => [m.path, m.family]),
        );
        expect(generated.head).toEqual(expectedHead(ref));
      });

      it("allows exactly the registry's JSON-RPC methods, each with its access, and no denied or unknown one", () => {
        for (const mount of ref.mounts) {
          const rpc = mountOf(generatedOf(ref.label), mount.path).policy.jsonrpc;
          if (mount.jsonrpc === undefined) {
            expect(rpc, mount.path).toBeUndefined();
            continue;
          }
          const { methods, ...envelope } = mount.jsonrpc;
          expect(rpc).toMatchObject(envelope);
          const table = rpc?.methods ?? new Map();
          expect(Object.fromEntries(table)).toEqual(Object.fromEntries(methods));
          for (const pattern of mount.deniedMethods)
            expect(
              [...table.keys()].filter((name) => deniedBy(pattern, name)),
              pattern,
            ).toEqual([]);
          for (const unknown of ["zz_unknownMethod", "", "constructor", "__proto__"])
            expect(table.get(unknown), unknown).toBeUndefined();
        }
      });

      it("answers every registry route with its access, and unknown routes and wrong methods as the registry says", () => {
        for (const mount of ref.mounts) {
          const routes = mountOf(generatedOf(ref.label), mount.path).policy.routes;
          if (mount.routes.length === 0) {
            expect(routes, mount.path).toBeUndefined();
            continue;
          }
          if (routes === undefined) throw new Error(`${ref.label} ${mount.path}: no generated routes`);
          for (const route of mount.routes) {
            // a guard on the reference itself: it serves each allowed route's own sample path
            for (const method of route.methods)
              expect(answerRoute(mount, method, samplePath(route)), route.text).toMatchObject({
                kind: "match",
              });
          }
          for (const path of probePaths(mount.routes, mount.deniedRoutes)) {
            for (const method of [...HTTP_METHODS, "constructor"]) {
              const want = answerRoute(mount, method, path);
              const got = matchRoute(routes, method, path);
              const where = `${method} /${path.join("/")}`;
              if (got.kind === "method-not-allowed")
                expect({ ...got, allow: [...got.allow].sort() }, where).toEqual(want);
              else expect(got, where).toEqual(want);
            }
          }
          for (const denied of mount.deniedRoutes)
            for (const method of denied.methods)
              expect(matchRoute(routes, method, samplePath(denied)).kind, denied.text).not.toBe("match");
        }
      });

      it("marks exactly the registry's writes, so the upstream policy never sends one twice", () => {
        for (const mount of ref.mounts) {
          const policy = mountOf(generatedOf(ref.label), mount.path).policy;
          if (policy.jsonrpc !== undefined)
            expect([...policy.jsonrpc.writes].sort(), mount.path).toEqual([...mount.writeMethods].sort());
          const writeOf = (method: string, path: readonly string[]) =>
            policy.writeRoutes !== undefined && matchRoute(policy.writeRoutes, method, path).kind === "match";
          for (const route of mount.writeRoutes)
            for (const method of route.methods)
              expect(writeOf(method, samplePath(route)), route.text).toBe(true);
          const writes = new Set(mount.writeRoutes.map((r) => r.text));
          for (const route of mount.routes.filter((r) => !writes.has(r.text)))
            for (const method of route.methods)
              expect(writeOf(method, samplePath(route)), `${route.text} is no write`).toBe(false);
        }
      });

      it("probes each mount with a head call that mount serves, and knows its network's block time", () => {
        const generated = generatedOf(ref.label);
        expect(generated.blockTimeSeconds).toBe(ref.blockTime);
        for (const mount of generated.mounts) {
          const { head } = mount;
          if (head.kind === "jsonrpc")
            expect(mount.policy.jsonrpc?.methods.get(head.method), mount.path).toBe("shared");
          else {
            const routes = mount.policy.routes;
            expect(
              routes && matchRoute(routes, head.method, head.path.split("/").slice(1)),
              mount.path,
            ).toMatchObject({ kind: "match", access: "shared" });
          }
        }
      });

      it("serves its head call", () => {
        const generated = generatedOf(ref.label);
        const head = generated.head;
        if (head.kind === "jsonrpc") {
          const mount = generated.mounts.find((m) => m.policy.jsonrpc?.methods.has(head.method));
          expect(mount?.policy.jsonrpc?.methods.get(head.method)).toBe("shared");
        } else {
          const answers = generated.mounts.flatMap((m) =>
            m.policy.routes ? [matchRoute(m.policy.routes, head.method, head.path.split("/").slice(1))] : [],
          );
          expect(answers).toContainEqual(expect.objectContaining({ kind: "match", access: "shared" }));
        }
      });

      it("declares a chain id exactly when it serves eth_chainId, one id per chain", () => {
        const generated = generatedOf(ref.label);
        const serves = generated.mounts.some((m) => m.policy.jsonrpc?.methods.has(CHAIN_ID_METHOD));
        if (!serves || ref.noChainId) {
          expect(generated.chainId).toBeUndefined();
          return;
        }
        expect(Number.isInteger(generated.chainId) && (generated.chainId as number) > 0).toBe(true);
        const network = [...endpointsByLabel.values()].filter((e) => e.code === generated.code);
        const mainnet = network.find((e) => e.environment === "mainnet");
        for (const other of network) {
          // an archive serves its mainnet's chain; each other environment is a chain of its own
          const chainOf = (e: Endpoint) =>
            e.environment === "archive" && mainnet ? "mainnet" : e.environment;
          const sameChain = chainOf(other) === chainOf(generated);
          if (sameChain)
            expect(other.chainId, `${other.label} is on the chain of ${ref.label}`).toBe(generated.chainId);
          else
            expect(other.chainId, `${other.label} is another chain than ${ref.label}`).not.toBe(
              generated.chainId,
            );
        }
      });
    });
  }
});

function mountOf(endpoint: Endpoint, path: string): Mount {
  const mount = endpoint.mounts.find((m) => m.path === path);
  if (mount === undefined) throw new Error(`${endpoint.label} has no generated mount at ${path}`);
  return mount;
}

function expectedHead(ref: RefEndpoint): unknown {
  const { method, params, route, body, field, encoding } = ref.head;
  const fields = { field: field.split("."), encoding };
  if (method !== undefined)
    return { kind: "jsonrpc", method, ...(params === undefined ? {} : { params }), ...fields };
  const [verb, path] = (route as string).split(" ");
  return { kind: "rest", method: verb, path, ...(body === undefined ? {} : { body }), ...fields };
}

/**
 * The paths to ask both tables about: each allowed and denied route's sample path, the same path one
 * segment shorter and one longer, and paths no route has.
 */
function probePaths(routes: readonly RefRoute[], denied: readonly RefRoute[]): string[][] {
  const paths = [...routes, ...denied].flatMap((route) => {
    const path = samplePath(route);
    return [path, path.slice(0, -1), [...path, "zz-extra"]];
  });
  paths.push(["zz-unknown"], ["zz-unknown", "deeper"], []);
  const seen = new Set<string>();
  return paths.filter((path) => {
    const key = path.join("/");
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
