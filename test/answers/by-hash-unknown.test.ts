import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type Responder, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A block named by hash that one node has not seen yet (the caller had the hash from a node ahead) is
// asked once more of another node of the label, whether the first answered null or its software's own
// "no such block" error (registry `reads.unknownBlock`, and for a read of state the archive rule's
// errors): bitcoind's -5 "Block not found" at HTTP 500, nearcore's UNKNOWN_BLOCK. A NEAR key without
// archive access was told ARCHIVE_REQUIRED for a block made a moment ago.

const btc = endpointsByLabel.get("btc") as Endpoint;
const near = endpointsByLabel.get("near") as Endpoint;

/** A node of `endpoint` that answers `known` for a call naming `hash`, or `unknown` when it has not seen it. */
function nodeOf(endpoint: Endpoint, height: number, hash: string, answer: Responder): Promise<LoopbackNode> {
  const byHash: Responder = (request) => (request.body.includes(hash) ? answer(request) : undefined);
  return startLoopbackNode(firstOf(byHash, softwareNode(endpoint, nodeState(endpoint, height))));
}
const idOf = (body: string) => /"id":\s*("[^"]*"|\d+)/.exec(body)?.[1] ?? "null";

describe("bitcoind's 'Block not found' for a hash another node has (loopback Bitcoin Core)", () => {
  const HASH = "00".repeat(4) + "ab".repeat(28);
  let nodes: LoopbackNode[];
  let gw: RunningGateway;

  beforeAll(async () => {
    nodes = await Promise.all([
      nodeOf(btc, 800_001, HASH, (r) => ({
        body: `{"result":{"hash":"${HASH}","height":800001},"error":null,"id":${idOf(r.body)}}\n`,
      })),
      nodeOf(btc, 800_000, HASH, (r) => ({
        status: 500,
        body: `{"result":null,"error":{"code":-5,"message":"Block not found"},"id":${idOf(r.body)}}\n`,
      })),
    ]);
    gw = await startGateway({
      upstreams: { btc: nodes.map((node, i) => ({ url: node.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("finds the block, whichever node a call lands on; the node that did not know it stays in rotation", async () => {
    for (let id = 1; id <= 6; id++) {
      const r = await gw.call("btc", `/${KEYS.all}/`, {
        body: `{"jsonrpc":"1.0","id":${id},"method":"getblock","params":["${HASH}"]}`,
      });
      expect(r.status, r.text).toBe(200);
      expect(r.json).toMatchObject({ result: { height: 800_001 }, id });
    }
    const states = gw.gateway.upstreams.group("btc", "/")?.members.map((m) => m.health.state);
    expect(states).toEqual(["healthy", "healthy"]);
  });
});

describe("nearcore's UNKNOWN_BLOCK for a hash another full node has (loopback nearcore)", () => {
  const HASH = "7tkzFg8RHBmMw1ncRJZCCZAizgq4rwCftTKYLce8RU8t";
  let nodes: LoopbackNode[];
  let gw: RunningGateway;

  beforeAll(async () => {
    nodes = await Promise.all([
      nodeOf(near, 120_000_001, HASH, (r) => ({
        body: r.body.includes('"gas_price"')
          ? `{"jsonrpc":"2.0","result":{"gas_price":"100000000"},"id":${idOf(r.body)}}`
          : `{"jsonrpc":"2.0","result":{"header":{"height":120000001,"hash":"${HASH}"},"chunks":[]},"id":${idOf(r.body)}}`,
      })),
      // nearcore's answer for a block it does not have (chain/jsonrpc-primitives errors.rs), at HTTP 200
      nodeOf(near, 120_000_000, HASH, (r) => ({
        body: `{"jsonrpc":"2.0","error":{"name":"HANDLER_ERROR","cause":{"info":{"block_reference":{"block_id":"${HASH}"}},"name":"UNKNOWN_BLOCK"},"code":-32000,"message":"Server error","data":"DB Not Found Error: BLOCK: ${HASH}"},"id":${idOf(r.body)}}`,
      })),
    ]);
    gw = await startGateway({
      upstreams: { near: nodes.map((node, i) => ({ url: node.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("a key without archive access gets the block, never ARCHIVE_REQUIRED", async () => {
    for (let id = 1; id <= 6; id++) {
      const r = await gw.call("near", `/${KEYS.noArchive}/`, {
        body: JSON.stringify({ jsonrpc: "2.0", id, method: "block", params: { block_id: HASH } }),
      });
      expect(r.status, r.text).toBe(200);
      expect(r.json, r.text).toMatchObject({ result: { header: { hash: HASH } }, id });
    }
  });

  it("so does a call that names the block as its one param (gas_price), by position and by name", async () => {
    for (const params of [[HASH], { block_id: HASH }, [HASH], { block_id: HASH }]) {
      const r = await gw.call("near", `/${KEYS.noArchive}/`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "gas_price", params }),
      });
      expect(r.json, r.text).toMatchObject({ result: { gas_price: "100000000" }, id: 3 });
    }
  });
});
