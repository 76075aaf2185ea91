import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { NodeRejection, type NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// A Starknet block says its own finality: `status` ACCEPTED_ON_L1 once the node has seen it settled on
// L1, ACCEPTED_ON_L2 before (pathfinder's and juno's block objects). Two nodes at one head may hold
// different L1-accepted blocks: an answer is as final as the node that gave it holds its block. Judged by
// the label's highest finalized height, a node's ACCEPTED_ON_L2 for a block another node had seen settled
// was kept for good, and served after every node said ACCEPTED_ON_L1.

const starknet = endpointsByLabel.get("starknet") as Endpoint;
const HEAD = 500_000;
const ASKED = HEAD - 20;
/** Each node's L1-accepted block: A's ahead of the block asked, B's behind it (B reads L1 late). */
const twoViews = () =>
  new Map([
    ["A", HEAD - 10],
    ["B", HEAD - 30],
  ]);

/** starknet_getBlockWithTxHashes as a node whose L1-accepted block is `settled.get(name)` answers it. */
function blocks(settled: ReadonlyMap<string, number>, name: string): Record<string, TypicalAnswer> {
  const block = (state: NodeState, params: unknown) => {
    const id = Array.isArray(params) ? params[0] : (params as { block_id?: unknown }).block_id;
    const l1 = settled.get(name) as number;
    const n =
      id === "l1_accepted"
        ? l1
        : id === "latest"
          ? state.height
          : typeof id === "object" && id !== null && "block_number" in id
            ? (id as { block_number: number }).block_number
            : Number.NaN;
    if (!(n <= state.height)) throw new NodeRejection(24, "Block not found");
    return {
      status: n <= l1 ? "ACCEPTED_ON_L1" : "ACCEPTED_ON_L2",
      block_hash: `0x${n.toString(16)}`,
      parent_hash: `0x${(n - 1).toString(16)}`,
      block_number: n,
      transactions: [],
    };
  };
  return { starknet_getBlockWithTxHashes: { result: block } };
}

/** Two Starknet nodes at one head, A and B, whose L1-accepted blocks `settled` says; B weighs `weightB`. */
async function twoNodes(settled: ReadonlyMap<string, number>, weightB: number, cache: boolean) {
  const nodes = await Promise.all(
    ["A", "B"].map((name) =>
      startLoopbackNode(
        softwareNode(starknet, nodeState(starknet, HEAD), [""], { answers: blocks(settled, name) }),
      ),
    ),
  );
  const gw = await startGateway({
    upstreams: {
      starknet: [
        { url: (nodes[0] as LoopbackNode).url, name: "A", weight: 1 },
        { url: (nodes[1] as LoopbackNode).url, name: "B", weight: weightB },
      ],
    },
    health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    cache: { ...DEFAULT_CACHE, enabled: cache },
  });
  await everyNodeInRotation(gw);
  const group = gw.gateway.upstreams.group("starknet", "/");
  await eventually(() => group?.finalized === HEAD - 10, 3_000, "A's L1-accepted block probed");
  return { nodes, gw };
}

const blockAt = (gw: RunningGateway, blockId: unknown, id: number) =>
  gw.call("starknet", `/${KEYS.all}/`, {
    body: JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: "starknet_getBlockWithTxHashes",
      params: { block_id: blockId },
    }),
  });

describe("an answer that says its block's finality is kept for good only where its node holds the block final", () => {
  const settled = twoViews();
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  const read = (id: number) => blockAt(gw, { block_number: ASKED }, id);
  const statusOf = (answer: { json: unknown }) =>
    (answer.json as { result?: { status?: string } }).result?.status;

  beforeAll(async () => {
    // B takes almost every call
    ({ nodes, gw } = await twoNodes(settled, 100, true));
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("B's ACCEPTED_ON_L2 is not kept past B's own finality: once B has the block on L1, callers read that", async () => {
    const first = await read(1);
    expect(statusOf(first)).toBe("ACCEPTED_ON_L2");
    settled.set("B", HEAD - 5);
    await eventually(
      async () => statusOf(await read(2)) === "ACCEPTED_ON_L1",
      5_000,
      "ACCEPTED_ON_L1 once B holds the block settled",
    );
    // and now that both hold it final, the answer is kept for good
    await read(3);
    expect((await read(4)).headers["x-cache"]).toBe("hit");
  });
});

// Each node answers the finalized tag with its own finalized block: read from whichever the choice gives,
// a caller polling `l1_accepted` saw it go back and forth by twenty blocks. The node that named the highest
// goes first.
describe("a read at the finalized tag goes to the node that named the highest finalized block", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  beforeAll(async () => {
    ({ nodes, gw } = await twoNodes(twoViews(), 1, false));
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("polled, l1_accepted names A's block every time, never B's older one", async () => {
    const seen: number[] = [];
    for (let id = 1; id <= 8; id++) {
      const answer = await blockAt(gw, "l1_accepted", id);
      seen.push((answer.json as { result: { block_number: number } }).result.block_number);
    }
    expect(new Set(seen)).toEqual(new Set([HEAD - 10]));
  });
});
