import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { globMatcher } from "../../codegen/checks.js";
import { ROOT } from "./helpers.js";

// The method and route sets of the shared upstream reference, as the test's own fixture holds them (its
// header names the source): `ethereum: {allow, premium, deny, ...}` and so on.
const sets = parse(readFileSync(join(ROOT, "test/fixtures/upstream-interfaces.yaml"), "utf8")) as Record<
  string,
  Record<string, unknown>
>;
const registry = parse(readFileSync(join(ROOT, "registry/networks.yaml"), "utf8"), { maxAliasCount: -1 });

// reference section key -> registry interface id
const JSONRPC: Record<string, string> = {
  ethereum: "ethereum",
  substrate: "substrate",
  near: "near",
  stellar_rpc: "stellar-rpc",
  toncenter_v2: "toncenter",
  ogmios_v6: "ogmios",
  bitcoin_core: "bitcoin-core",
  dogecoin_1_14: "dogecoin-core",
  starknet: "starknet",
  ckb: "ckb",
  zilliqa: "zilliqa",
};

const names = (list: unknown): string[] =>
  (Array.isArray(list) ? list : []).filter((v): v is string => typeof v === "string" && /^[\w./]+$/.test(v));

describe("method and route sets against the upstream reference (test/fixtures/upstream-interfaces.yaml)", () => {
  for (const [key, id] of Object.entries(JSONRPC)) {
    describe(id, () => {
      const ref = sets[key] ?? {};
      const methods = registry.interfaces[id].methods;
      const groups = ["shared", "dedicated", "websocket", "subscribe", "unsubscribe"];
      const allowed = new Set<string>(groups.flatMap((group) => methods[group] ?? []));
      const denied: string[] = methods.deny ?? [];

      it("includes the full standard set", () => {
        const standard = names(ref.allow);
        expect(standard.length).toBeGreaterThan(0);
        expect(standard.filter((m) => !allowed.has(m))).toEqual([]);
      });

      it("keeps premium and node-internal methods off the shared plan", () => {
        const shared = new Set<string>(methods.shared);
        expect([...names(ref.premium), ...names(ref.restricted)].filter((m) => shared.has(m))).toEqual([]);
      });

      it("allows none of its unsafe methods", () => {
        const unsafe = (Array.isArray(ref.deny) ? ref.deny : []).filter(
          (v): v is string => typeof v === "string",
        );
        // The reference lists state_traceBlock both as unsafe and as premium "on dedicated tracing nodes";
        // its premium entry is the resolution, so such names may sit in the dedicated group.
        const premium = new Set(names(ref.premium));
        const dedicated = new Set<string>(methods.dedicated ?? []);
        for (const pattern of unsafe.filter(
          (p) => /^[\w./*]+$/.test(p) && !(premium.has(p) && dedicated.has(p)),
        )) {
          const matches = globMatcher(pattern);
          expect([...allowed].filter(matches), `${pattern} must not be allowed`).toEqual([]);
          if (!pattern.includes("*"))
            expect(
              denied.some((d) => globMatcher(d)(pattern)),
              `${pattern} is denied`,
            ).toBe(true);
        }
      });
    });
  }

  it("TRON JSON-RPC has the java-tron set, without the methods it does not serve", () => {
    const tron = sets.tron as { jsonrpc: { allow: string[]; not_supported_by_tron: string[] } };
    const methods = registry.interfaces["tron-jsonrpc"].methods;
    expect(tron.jsonrpc.allow.filter((m) => !methods.shared.includes(m))).toEqual([]);
    expect(tron.jsonrpc.not_supported_by_tron.filter((m) => methods.shared.includes(m))).toEqual([]);
  });

  it("REST interfaces carry every allowed route path of the reference", () => {
    const routes = (id: string): string[] => {
      const groups = registry.interfaces[id].routes;
      return [...(groups.shared ?? []), ...(groups.dedicated ?? []), ...(groups.stream ?? [])];
    };
    const tron = sets.tron as Record<string, unknown>;
    const tronRoutes = routes("tron-http").map((r) => r.split(" ")[1]);
    for (const path of [...names(tron.allow_wallet), ...names(tron.allow_walletsolidity)]) {
      expect(tronRoutes).toContain(path);
    }
    const shape = (r: string) =>
      r
        .replace(/\{[^}]+\}/g, "*")
        .replace(/\*\.\.\./g, "**")
        .replace(/\s+/g, " ");
    for (const [key, id] of [
      ["vechain_thor", "vechain-thor"],
      ["nem_nis1", "nem-nis1"],
      ["algod_v2", "algod"],
    ] as const) {
      const have = new Set(routes(id).map(shape));
      const want = ((sets[key]?.allow as string[] | undefined) ?? []).map(shape);
      expect(want.length).toBeGreaterThan(0);
      expect(want.filter((r) => !have.has(r))).toEqual([]);
    }
  });
});
