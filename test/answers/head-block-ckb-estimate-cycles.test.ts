import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import type { LoopbackNode } from "../support/loopback-node.js";
import { NodeRejection, type NodeState } from "../support/node-software.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// CKB's estimate_cycles resolves the transaction's inputs and cell deps in the node's
// snapshot at its tip (rpc/src/module/chain.rs CyclesEstimator: snapshot.get_cell(out_point), else
// CellStatus::Unknown -> RPCError TransactionFailedToResolve, -301), as get_live_cell (reads.atHead) does.
// A transaction spending a cell made in the head block is estimated on the node a block behind: -301.
//
// (1) CKB reads that name the head block by hash, or a transaction committed in it, reach the
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

const H = 7_500_000;

const ANSWERS: Readonly<Record<string, TypicalAnswer>> = {
  estimate_cycles: {
    result: (state: NodeState) => {
      if (state.height < H + 1)
        throw new NodeRejection(
          -301,
          "TransactionFailedToResolve: Resolve failed Unknown(OutPoint(0x77…77, 0))",
        );
      return { cycles: "0x219" };
    },
  },
};

describe("CKB estimate_cycles of a transaction spending a cell of the head block", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;

  let apart: NodesBlockApart | undefined;
  beforeAll(async () => {
    apart = await nodesBlockApart("ckb", H, softwareWith(ANSWERS));
    nodes.push(...apart.nodes);
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  it("estimates on a node at the head the caller saw", async () => {
    const errors: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      const got = await gw.call("ckb", `/${KEYS.all}/`, {
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: i + 1,
          method: "estimate_cycles",
          params: [
            {
              version: "0x0",
              cell_deps: [],
              header_deps: [],
              inputs: [{ previous_output: { tx_hash: `0x${"77".repeat(32)}`, index: "0x0" }, since: "0x0" }],
              outputs: [],
              outputs_data: [],
              witnesses: [],
            },
          ],
        }),
      });
      const answer = got.json as { error?: unknown };
      if (answer.error !== undefined) errors.push(answer.error);
    }
    expect(errors).toEqual([]);
  });
});
