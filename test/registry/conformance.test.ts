import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildModel } from "../../codegen/model.js";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { ROOT } from "./helpers.js";

// Issue #2's table: every label the spec names, with its family, node class, WebSocket and public flags.
const expected: Record<string, { family: string; nodeClass: string; websocket?: true; public?: true }> = {
  xtz: { family: "rest", nodeClass: "full" },
  "xtz-testnet": { family: "rest", nodeClass: "full" },
  vet: { family: "rest", nodeClass: "full" },
  nem: { family: "rest", nodeClass: "full" },
  algo: { family: "rest", nodeClass: "full" },
  xlm: { family: "jsonrpc", nodeClass: "full", websocket: true },
  "xlm-testnet": { family: "jsonrpc", nodeClass: "full" },
  dot: { family: "jsonrpc", nodeClass: "full", websocket: true },
  ksm: { family: "jsonrpc", nodeClass: "full" },
  "dot-archive": { family: "jsonrpc", nodeClass: "archive" },
  near: { family: "jsonrpc", nodeClass: "full", websocket: true },
  "near-testnet": { family: "jsonrpc", nodeClass: "full" },
  "near-archive": { family: "jsonrpc", nodeClass: "archive" },
  ton: { family: "jsonrpc", nodeClass: "full", websocket: true },
  "ton-testnet": { family: "jsonrpc", nodeClass: "full" },
  "ton-archive": { family: "jsonrpc", nodeClass: "archive" },
  avax: { family: "jsonrpc", nodeClass: "full", websocket: true },
  "avax-testnet": { family: "jsonrpc", nodeClass: "full" },
  "avax-archive": { family: "jsonrpc", nodeClass: "archive" },
  zil: { family: "mixed", nodeClass: "full" },
  ada: { family: "jsonrpc", nodeClass: "full", websocket: true },
  "ada-testnet": { family: "jsonrpc", nodeClass: "full" },
  "ada-archive": { family: "jsonrpc", nodeClass: "archive" },
  bsc: { family: "jsonrpc", nodeClass: "full", websocket: true, public: true },
  "bsc-testnet": { family: "jsonrpc", nodeClass: "full" },
  "bsc-archive": { family: "jsonrpc", nodeClass: "archive" },
  eth: { family: "jsonrpc", nodeClass: "full", websocket: true },
  "eth-holesky": { family: "jsonrpc", nodeClass: "full" },
  "eth-sepolia": { family: "jsonrpc", nodeClass: "full" },
  "eth-archive": { family: "jsonrpc", nodeClass: "archive" },
  atleta: { family: "jsonrpc", nodeClass: "full", websocket: true },
  "atleta-testnet": { family: "jsonrpc", nodeClass: "full" },
  "atleta-archive": { family: "jsonrpc", nodeClass: "archive" },
  doge: { family: "jsonrpc", nodeClass: "full" },
  "doge-testnet": { family: "jsonrpc", nodeClass: "full" },
  starknet: { family: "jsonrpc", nodeClass: "full" },
  "starknet-testnet": { family: "jsonrpc", nodeClass: "full" },
  ckb: { family: "jsonrpc", nodeClass: "full" },
  "ckb-testnet": { family: "jsonrpc", nodeClass: "full" },
  trx: { family: "mixed", nodeClass: "full", websocket: true, public: true },
  "trx-testnet": { family: "mixed", nodeClass: "full" },
  btc: { family: "jsonrpc", nodeClass: "full" },
};

// The reference: the same registry read straight from YAML, next to the generated tables (hono keeps its
// precompiled router honest the same way).
const reference = buildModel(join(ROOT, "registry/networks.yaml"));

describe("every label in the registry", () => {
  it("the generated table holds exactly the spec's labels", () => {
    expect([...endpointsByLabel.keys()].sort()).toEqual(Object.keys(expected).sort());
    expect(reference.endpoints.map((e) => e.label).sort()).toEqual(Object.keys(expected).sort());
  });

  for (const endpoint of reference.endpoints) {
    describe(endpoint.label, () => {
      const generated = endpointsByLabel.get(endpoint.label);

      it("has the family, node class, WebSocket and public flags of the spec", () => {
        const want = expected[endpoint.label];
        expect(generated).toMatchObject({
          family: want?.family,
          nodeClass: want?.nodeClass,
          websocket: want?.websocket ?? false,
          public: want?.public ?? false,
        });
      });

      it("matches the reference read from YAML", () => {
        const { mounts, ...plain } = endpoint;
        expect(generated).toMatchObject(plain);
        expect(generated?.mounts.map((m) => [m.path, m.policy.id])).toEqual(
          mounts.map((m) => [m.path, m.policy]),
        );
      });

      it("serves its head call", () => {
        const head = generated?.head;
        const mount = generated?.mounts.find((m) =>
          head?.kind === "jsonrpc" ? m.policy.jsonrpc : m.policy.routes,
        );
        if (head?.kind === "jsonrpc") expect(mount?.policy.jsonrpc?.methods.get(head.method)).toBe("shared");
        else expect(head?.kind === "rest" && mount?.policy.routes).toBeTruthy();
      });

      it("has a chain id when it is an EVM network of spec §2.5", () => {
        const ids: Record<string, number> = { avax: 43114, zil: 32769, bsc: 56, eth: 1 };
        const id = ids[endpoint.label];
        if (id !== undefined) expect(generated?.chainId).toBe(id);
      });
    });
  }
});
