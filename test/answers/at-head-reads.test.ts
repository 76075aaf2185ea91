import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { LabelUpstreams } from "../../src/config/types.js";
import type { Endpoint, Mount } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// Every call the registry says reads at the node's head (`reads.atHead`: a tip's hash, an account's
// state, a transaction looked up by hash) goes only to a node that has reached the head the label
// served, as the head call does: a node a block behind answers from an older block, and the head a
// caller sees through such a call went backwards (starknet.js's getBlockLatestAccepted, bitcoind's
// getblockchaininfo). One label per interface that lists any, behind a node ahead and one behind.

interface Case {
  readonly endpoint: Endpoint;
  readonly mount: Mount;
  readonly methods: readonly string[];
}

/** A REST interface's routes that read at the head (`reads.atHeadPaths`): algod's accounts, java-tron's. */
interface RestCase {
  readonly endpoint: Endpoint;
  readonly mount: Mount;
  readonly paths: readonly string[];
}

const cases: Case[] = [];
const interfaces = new Set<string>();
for (const endpoint of endpointsByLabel.values()) {
  const mount = endpoint.mounts[0];
  const methods = mount?.policy.jsonrpc?.reads?.atHead;
  if (endpoint.mounts.length !== 1 || mount === undefined || methods === undefined) continue;
  if (interfaces.has(mount.policy.id)) continue;
  interfaces.add(mount.policy.id);
  cases.push({ endpoint, mount, methods });
}
const restCases: RestCase[] = [];
for (const endpoint of endpointsByLabel.values()) {
  const mount = endpoint.mounts.find((m) => m.policy.restReads?.atHeadPaths !== undefined);
  const paths = mount?.policy.restReads?.atHeadPaths;
  if (mount === undefined || paths === undefined || interfaces.has(mount.policy.id)) continue;
  interfaces.add(mount.policy.id);
  restCases.push({ endpoint, mount, paths });
}
const all = [...cases, ...restCases];

describe("a read at the head goes only to a node at the served head, on every interface (loopback nodes)", () => {
  const nodes = new Map<string, LoopbackNode[]>();
  let gw: RunningGateway;

  beforeAll(async () => {
    const upstreams: Record<string, LabelUpstreams> = {};
    await Promise.all(
      all.map(async ({ endpoint }, i) => {
        const height = 1_000_000 + i * 1_000;
        const pair = await Promise.all(
          [height + 1, height].map((h) => startLoopbackNode(softwareNode(endpoint, nodeState(endpoint, h)))),
        );
        nodes.set(endpoint.label, pair);
        upstreams[endpoint.label] = pair.map((node, n) => ({
          url: node.url,
          name: n === 0 ? "ahead" : "behind",
        }));
      }),
    );
    gw = await startGateway({ upstreams, health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 } });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...nodes.values()].flat().map((node) => node.close()));
  });

  it("covers the families whose callers saw the head go back", () => {
    for (const id of [
      "bitcoin-core",
      "starknet",
      "ckb",
      "toncenter",
      "ethereum",
      "near",
      "algod",
      "tron-http",
    ])
      expect([...interfaces], id).toContain(id);
  });

  for (const { endpoint, mount, methods } of cases) {
    it.concurrent(`${endpoint.label}: ${methods.join(", ")}`, {
      timeout: Math.max(20_000, methods.length * 500),
    }, async () => {
      await everyNodeInRotation(gw, endpoint.label, 4_000);
      const byName = !mount.policy.jsonrpc?.validate({ jsonrpc: "2.0", id: 1, method: "x", params: [] });
      const [ahead, behind] = nodes.get(endpoint.label) as LoopbackNode[];
      // a WebSocket-only call (Ogmios' acquireLedgerState) is refused over HTTP: its own test holds it
      // to the head on a socket (ogmios-point-at-head.test.ts)
      for (const method of methods.filter((m) => mount.policy.jsonrpc?.methods.get(m) !== "websocket")) {
        for (let i = 0; i < 4; i++) {
          const body = JSON.stringify({ jsonrpc: "2.0", id: i + 1, method, params: byName ? {} : [] });
          // a dedicated-node key: a dedicated method that reads at the head (Starknet's traceTransaction) too
          await gw.call(endpoint.label, `/${KEYS.dedicated}/`, { body });
        }
        // a caller's request carries its id; the prober's (Substrate's finality probe, chain_getFinalizedHead) none
        const asked = (node: LoopbackNode | undefined) =>
          node?.requests.filter(
            (r) => r.body.includes(`"${method}"`) && r.headers["x-request-id"] !== undefined,
          ).length;
        expect(asked(behind), `${endpoint.label} ${method} reached the node behind`).toBe(0);
        expect(asked(ahead), `${endpoint.label} ${method}`).toBe(4);
      }
    });
  }

  for (const { endpoint, mount, paths } of restCases) {
    it.concurrent(
      `${endpoint.label}: ${paths.join(", ")}`,
      async () => {
        await everyNodeInRotation(gw, endpoint.label, 4_000);
        const [ahead, behind] = nodes.get(endpoint.label) as LoopbackNode[];
        for (const shape of paths) {
          // a route of that shape, or one below it: an account's address, an asset's id
          const path = `${mount.path === "/" ? "" : mount.path}${shape.replaceAll("{}", "AAAA")}`;
          for (let i = 0; i < 4; i++) {
            // a dedicated-node key: a dedicated route that reads at the head (algod's group deltas) too
            const got = await gw.call(endpoint.label, `/${KEYS.dedicated}${path}`, { method: "GET" });
            // a route its SDK POSTs (Thor's POST /accounts: clauses run at the best block)
            if (got.status === 405)
              await gw.call(endpoint.label, `/${KEYS.dedicated}${path}`, { method: "POST", body: "{}" });
          }
          // a caller's request carries its id; the prober's (algod's chain call is /v2/transactions/params) none
          const asked = (node: LoopbackNode | undefined) =>
            node?.requests.filter(
              (r) => r.url.split("?")[0] === path && r.headers["x-request-id"] !== undefined,
            ).length;
          expect(asked(behind), `${endpoint.label} ${path} reached the node behind`).toBe(0);
          expect(asked(ahead), `${endpoint.label} ${path}`).toBe(4);
        }
      },
      // java-tron's some ninety routes, four calls each (and a refused GET before each POST), in turn
      Math.max(20_000, paths.length * 500),
    );
  }
});
