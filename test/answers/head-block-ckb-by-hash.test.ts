import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import type { LoopbackNode } from "../support/loopback-node.js";
import { NodeRejection, type NodeState } from "../support/node-software.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// CKB reads that name the head block by hash, or a transaction committed in it, reach the
// node a block behind, which does not have it, and the caller gets its "not there" (no retry on the node
// that has it, no routing to a node at the served head).
//
// Real CKB (nervosnetwork/ckb rpc/src/module/chain.rs):
// - get_block_median_time(block_hash) -> Result<Option<Timestamp>>: `None` (null) when
//   snapshot.get_block_header(hash) has no such header;
// - get_transaction_proof / get_transaction_and_witness_proof(tx_hashes, block_hash?) -> get_tx_indices:
//   snapshot.get_transaction_info(tx) None -> RPCError::invalid_params("Transaction {tx} not yet in block").
// The registry lists get_block, get_header, get_block_filter, get_block_economic_state as by-hash reads
// (reads.at) and get_transaction as atHead, but neither of these.

const H = 7_000_000;
const hex = (n: number) => `0x${n.toString(16)}`;
const blockHash = (n: number) => `0x${n.toString(16).padStart(8, "0")}${"cd".repeat(28)}`;
const TX = `0x${"77".repeat(32)}`; // committed in block H + 1

const ANSWERS: Readonly<Record<string, TypicalAnswer>> = {
  get_block_median_time: {
    result: (state: NodeState, params?: unknown) => {
      const hash = (params as unknown[])[0];
      for (let n = state.height; n > state.height - 40; n--)
        if (blockHash(n) === hash) return hex(1_700_000_000_000 + n);
      return null;
    },
  },
  get_transaction_proof: {
    result: (state: NodeState) => {
      if (state.height < H + 1)
        throw new NodeRejection(-32602, `InvalidParams: Transaction ${TX} not yet in block`);
      return {
        block_hash: blockHash(H + 1),
        proof: { indices: ["0x1"], lemmas: [] },
        witnesses_root: `0x${"00".repeat(32)}`,
      };
    },
  },
};

describe("CKB by-hash reads of the head block through two nodes a block apart", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;

  let apart: NodesBlockApart | undefined;
  beforeAll(async () => {
    apart = await nodesBlockApart("ckb", H, softwareWith(ANSWERS));
    nodes.push(...apart.nodes);
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  it("get_block_median_time of the head block's hash answers the time, never null", async () => {
    // the caller saw the head first
    const tip = await gw.call("ckb", `/${KEYS.all}/`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "get_tip_block_number", params: [] }),
    });
    expect((tip.json as { result: string }).result).toBe(hex(H + 1));
    const results: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      const got = await gw.call("ckb", `/${KEYS.all}/`, {
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: i + 2,
          method: "get_block_median_time",
          params: [blockHash(H + 1)],
        }),
      });
      results.push((got.json as { result: unknown }).result);
    }
    expect(results).toEqual(Array(8).fill(hex(1_700_000_000_000 + H + 1)));
  });

  it("get_transaction_proof of a transaction in the head block answers the proof", async () => {
    const errors: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      const got = await gw.call("ckb", `/${KEYS.all}/`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: i + 20, method: "get_transaction_proof", params: [[TX]] }),
      });
      const answer = got.json as { error?: unknown };
      if (answer.error !== undefined) errors.push(answer.error);
    }
    expect(errors).toEqual([]);
  });
});
