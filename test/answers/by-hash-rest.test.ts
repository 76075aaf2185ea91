import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import {
  firstOf,
  type LoopbackNode,
  type Reply,
  type Responder,
  type SeenRequest,
  startLoopbackNode,
} from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A block named by hash that one node has not seen yet (the caller had the hash from a node ahead) is asked
// once more of another node of the label, as a JSON-RPC read by hash is (by-hash-unknown.test.ts): the REST
// interfaces say how their node answers a block it does not know (registry `reads.unknownBlockAnswers`):
// Octez's 404 with no body, Thor's 200 null, java-tron's 200 {}. A caller got that answer half the time.

interface Case {
  readonly label: string;
  readonly height: number;
  readonly hash: string;
  /** The read by hash, as the SDKs send it. */
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly body?: string;
  /** The node that has the block: its answer. */
  readonly known: Reply;
  /** The node that has not seen it: its software's answer. */
  readonly unknown: Reply;
}

const JSON_TYPE = { "content-type": "application/json" };
const TEZOS_HASH = `BL${"a".repeat(49)}`;
const THOR_ID = `0x${"01".repeat(32)}`;
const TRON_ID = `${"00".repeat(8)}${"ab".repeat(24)}`;

const CASES: readonly Case[] = [
  {
    label: "xtz",
    height: 5_000_001,
    hash: TEZOS_HASH,
    method: "GET",
    path: `/chains/main/blocks/${TEZOS_HASH}/header`,
    known: {
      headers: JSON_TYPE,
      body: `{"protocol":"PtParisBxoLz5gzMmn3d9WBQNoPSZakgnkMC2VNuQ3KXfUtUQeZ","chain_id":"NetXdQprcVkpaWU","hash":"${TEZOS_HASH}","level":5000001}\n`,
    },
    // Octez's resto: an unknown block is a 404 with no body (test/support/node-software.ts)
    unknown: { status: 404, body: "" },
  },
  {
    label: "vet",
    height: 19_000_001,
    hash: THOR_ID,
    method: "GET",
    path: `/blocks/${THOR_ID}`,
    known: {
      headers: { "content-type": "application/json; charset=utf-8" },
      body: `{"number":19000001,"id":"${THOR_ID}","size":361,"isFinalized":false}\n`,
    },
    // Thor: an unknown block is 200 null
    unknown: { headers: { "content-type": "application/json; charset=utf-8" }, body: "null\n" },
  },
  {
    label: "trx",
    height: 60_000_001,
    hash: TRON_ID,
    method: "POST",
    path: "/wallet/getblockbyid",
    body: `{"value":"${TRON_ID}"}`,
    known: {
      headers: { "content-type": "application/json; charset=utf-8" },
      body: `{"blockID":"${TRON_ID}","block_header":{"raw_data":{"number":60000001}}}\n`,
    },
    // java-tron's GetBlockByIdServlet: a block it does not have is {}
    unknown: { headers: { "content-type": "application/json; charset=utf-8" }, body: "{}\n" },
  },
];

/**
 * A node of `c`'s endpoint that answers `answer` to a request naming `c.hash`, its software's answer for an
 * unknown block to one naming a block no node has (`c.hash` reversed), and as its software otherwise.
 */
function nodeOf(endpoint: Endpoint, c: Case, height: number, answer: Reply): Promise<LoopbackNode> {
  const names = (request: SeenRequest, hash: string) =>
    request.url.includes(hash) || request.body.includes(hash);
  const byHash: Responder = (request) =>
    names(request, c.hash) ? answer : names(request, nobodys(c)) ? c.unknown : undefined;
  return startLoopbackNode(firstOf(byHash, softwareNode(endpoint, nodeState(endpoint, height))));
}

/** A block hash of the case's form that no node has. */
const nobodys = (c: Case) =>
  `${c.hash.slice(0, 2)}${[...c.hash.slice(2)].reverse().join("")}`.replace(/a/g, "b");

for (const c of CASES) {
  describe(`${c.label}: a block by hash that one node has not seen yet`, () => {
    const endpoint = endpointsByLabel.get(c.label) as Endpoint;
    let nodes: LoopbackNode[];
    let gw: RunningGateway;
    const asked = () =>
      nodes.map(
        (node) => node.requests.filter((r) => r.url.includes(c.hash) || r.body.includes(c.hash)).length,
      );
    const read = (hash = c.hash) =>
      gw.call(c.label, `/${KEYS.all}${c.path.replace(c.hash, hash)}`, {
        method: c.method,
        ...(c.body === undefined
          ? {}
          : { body: c.body.replace(c.hash, hash), headers: { "content-type": "application/json" } }),
      });

    beforeAll(async () => {
      nodes = await Promise.all([
        nodeOf(endpoint, c, c.height, c.known),
        nodeOf(endpoint, c, c.height - 1, c.unknown),
      ]);
      gw = await startGateway({
        // the node that has not seen the block is the one the choice picks first, nearly always
        upstreams: {
          [c.label]: nodes.map((node, i) => ({ url: node.url, name: `n${i}`, weight: i === 0 ? 1 : 50 })),
        },
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
        // every answer from a node: the cache would hide which node a read reached
        cache: { ...DEFAULT_CACHE, enabled: false },
      });
      await everyNodeInRotation(gw);
    });
    afterAll(async () => {
      await gw?.close();
      await Promise.all((nodes ?? []).map((node) => node.close()));
    });

    it("finds it whichever node a read lands on, asking the one that did not know it once", async () => {
      for (let i = 0; i < 6; i++) {
        const r = await read();
        expect(r.status, r.text).toBe(200);
        expect(r.text).toBe(c.known.body);
      }
      const [atKnowing, atUnknowing] = asked();
      // every read reached the node that has the block, most of them after the other said it had none
      expect(atKnowing).toBe(6);
      expect(atUnknowing).toBeGreaterThan(0);
      const states = gw.gateway.upstreams.group(c.label, "/")?.members.map((m) => m.health.state);
      expect(states).toEqual(["healthy", "healthy"]);
    });

    it("answers a block no node has as the node's software does, after asking each node once", async () => {
      const before = nodes.map((node) => node.requests.length);
      const r = await read(nobodys(c));
      expect(r.status).toBe(c.unknown.status ?? 200);
      expect(r.text).toBe(c.unknown.body);
      expect(nodes.map((node, i) => node.requests.length - (before[i] ?? 0))).toEqual([1, 1]);
    });
  });
}

describe("xtz: Octez's 404, which says an unknown block and a missing key alike", () => {
  const endpoint = endpointsByLabel.get("xtz") as Endpoint;
  const BLOCK_PATH = `/chains/main/blocks/${TEZOS_HASH}/header`;
  const KEY_PATH = `/chains/main/blocks/${TEZOS_HASH}/context/big_maps/1/exprtZBwZUeYYYfUs9B9Rg2ywHezVHnCCnmF9WsDQVrs582dSK63dC`;
  const HEADER = `{"protocol":"PtParisBxoLz5gzMmn3d9WBQNoPSZakgnkMC2VNuQ3KXfUtUQeZ","chain_id":"NetXdQprcVkpaWU","hash":"${TEZOS_HASH}","level":5000001}\n`;
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  const asked = (path: string) => nodes.map((node) => node.requests.filter((r) => r.url === path).length);

  /** n0 has the block (and no such key under it); n1 at `n1Height` has not seen it; n0 weighs `n0Weight`. */
  async function start(n1Height: number, n0Weight: number): Promise<void> {
    const n0: Responder = (request) =>
      request.url === BLOCK_PATH
        ? { headers: { "content-type": "application/json" }, body: HEADER }
        : request.url === KEY_PATH
          ? { status: 404, body: "" }
          : undefined;
    const n1: Responder = (request) =>
      request.url.includes(TEZOS_HASH) ? { status: 404, body: "" } : undefined;
    nodes = await Promise.all([
      startLoopbackNode(firstOf(n0, softwareNode(endpoint, nodeState(endpoint, 5_000_001)))),
      startLoopbackNode(firstOf(n1, softwareNode(endpoint, nodeState(endpoint, n1Height)))),
    ]);
    gw = await startGateway({
      upstreams: {
        xtz: nodes.map((node, i) => ({ url: node.url, name: `n${i}`, weight: i === 0 ? n0Weight : 1 })),
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, enabled: false },
    });
    await everyNodeInRotation(gw);
  }
  afterEach(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("a block made a moment ago, which the probes show neither node ahead of the other for, is found", async () => {
    // the block came after the last probe: both nodes show the same head
    await start(5_000_001, 1);
    for (let i = 0; i < 6; i++) {
      const r = await gw.call("xtz", `/${KEYS.all}${BLOCK_PATH}`, { method: "GET" });
      expect(r.status, r.text).toBe(200);
      expect(r.text).toBe(HEADER);
    }
  });

  it("a missing key, from a node that no other is level with, is its answer: no node behind it is asked", async () => {
    // the choice sends every read to n0, ahead; n1, behind it, cannot know more
    await start(5_000_000, 50);
    for (let i = 0; i < 5; i++) {
      const r = await gw.call("xtz", `/${KEYS.all}${KEY_PATH}`, { method: "GET" });
      expect(r.status).toBe(404);
    }
    expect(asked(KEY_PATH)).toEqual([5, 0]);
  });
});
