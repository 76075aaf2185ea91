import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { substrateHash } from "../support/chain-answers.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
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

/**
 * Two Starknet nodes at one head, A and B, whose L1-accepted blocks `settled` says; A a fallback (B takes
 * every call while it serves) or a primary like B.
 */
async function twoNodes(settled: ReadonlyMap<string, number>, tierA: "primary" | "fallback", cache: boolean) {
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
        { url: (nodes[0] as LoopbackNode).url, name: "A", tier: tierA },
        { url: (nodes[1] as LoopbackNode).url, name: "B" },
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
    // B takes every call
    ({ nodes, gw } = await twoNodes(settled, "fallback", true));
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
    ({ nodes, gw } = await twoNodes(twoViews(), "primary", false));
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

// The node that named the highest finalized block may be a block behind the served head: a read at the
// finalized tag, which needs that head as any read at the head does, is not held for it (it was, for the
// 3 s a read waits for a node to reach the head, and then went to the other node all the same).
describe("a read at the finalized tag is not held for a most-finalized node behind the head", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  const block = (n: number) => ({
    number: `0x${n.toString(16)}`,
    hash: `0x${n.toString(16).padStart(64, "0")}`,
    parentHash: `0x${(n - 1).toString(16).padStart(64, "0")}`,
    transactions: [],
  });
  /** An EVM node at `head` whose finalized block is `finalized`. */
  const evm = (head: number, finalized: number) =>
    jsonRpcResponder({
      eth_chainId: "0x1",
      eth_blockNumber: `0x${head.toString(16)}`,
      eth_getBlockByNumber: (params: unknown) => {
        const tag = (params as unknown[])[0];
        return block(
          tag === "finalized" ? finalized : tag === "latest" ? head : Number.parseInt(String(tag), 16),
        );
      },
    });

  beforeAll(async () => {
    nodes = await Promise.all([startLoopbackNode(evm(1000, 940)), startLoopbackNode(evm(1001, 930))]);
    gw = await startGateway({
      upstreams: { eth: nodes.map((node, i) => ({ url: node.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw);
    const group = gw.gateway.upstreams.group("eth", "/");
    await eventually(() => group?.finalized === 940 && group.served.height === 1001, 3_000, "both probed");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("answered by the node at the head at once, not after the head's wait", async () => {
    const started = performance.now();
    const answer = await gw.call("eth", `/${KEYS.all}/`, {
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getBlockByNumber",
        params: ["finalized", false],
      }),
    });
    expect(answer.status).toBe(200);
    // the head's wait is 3 s; an answer from a loopback node takes milliseconds
    expect(performance.now() - started).toBeLessThan(1_500);
  });
});

// Substrate's finalized head (chain_getFinalizedHead) from two nodes at one best block but not one finality:
// both have reached the served head, so the head rule let either answer, and a caller polling it saw the
// finalized head go back and forth. Registry `reads.atFinalized` sends it first to the node that named the
// highest finalized block, as a read at the finalized tag goes.
describe("Substrate's finalized head from two nodes at one head, one finalizing behind", () => {
  const dot = endpointsByLabel.get("dot") as Endpoint;
  const DOT_HEAD = 20_000_000;
  let nodes: LoopbackNode[];
  let gw: RunningGateway;

  beforeAll(async () => {
    nodes = await Promise.all(
      [2, 7].map((behind) =>
        startLoopbackNode(
          softwareNode(dot, nodeState(dot, DOT_HEAD), [""], {
            answers: {
              chain_getFinalizedHead: {
                result: ({ chain, height }) => substrateHash(chain, height - behind),
              },
            },
          }),
        ),
      ),
    );
    gw = await startGateway({
      upstreams: { dot: nodes.map((node, i) => ({ url: node.url, name: i === 0 ? "A" : "B" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "dot");
    const group = gw.gateway.upstreams.group("dot", "/");
    await eventually(() => group?.finalized === DOT_HEAD - 2, 3_000, "A's finalized head probed");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("polled, names A's finalized block every time, never B's older one", async () => {
    const seen = new Set<unknown>();
    for (let id = 1; id <= 8; id++) {
      const answer = await gw.call("dot", `/${KEYS.all}/`, {
        body: JSON.stringify({ jsonrpc: "2.0", id, method: "chain_getFinalizedHead", params: [] }),
      });
      seen.add((answer.json as { result: string }).result);
    }
    expect([...seen]).toEqual([substrateHash(dot.chain, DOT_HEAD - 2)]);
  });
});
