import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import { NodeRejection, type NodeState } from "../support/node-software.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// Reth's trace_rawTransaction(data, traceTypes, blockId?) (reth crates/rpc/rpc-api/src/trace.rs) traces a
// signed transaction on the state of the block it names (left out: latest), as trace_call does on its
// third param. A node that has not reached the block answers EthApiError::HeaderNotFound, -32001 "header
// not found" (crates/rpc/rpc-eth-types/src/error.rs). The registry placed trace_call's block but not this
// one's: a trace on the head block, just shown, got the node behind's error every other time.

const H = 21_000_000;
const hex = (n: number) => `0x${n.toString(16)}`;
/** A signed transaction's bytes (anvil's first dev account to 0x…beef): the node's answer does not read them. */
const RAW = `0x02f866018001843b9aca0082520894${"00".repeat(18)}beef0180c080a0${"35".repeat(32)}a0${"1b".repeat(32)}`;

function traced(state: NodeState, params: unknown) {
  const param = (params as unknown[])[2];
  // an EIP-1898 object or the block itself (alloy's BlockId)
  const block =
    typeof param === "object" && param !== null ? (param as { blockNumber?: unknown }).blockNumber : param;
  const at = block === undefined || block === "latest" ? state.height : Number(BigInt(String(block)));
  if (at > state.height) throw new NodeRejection(-32001, "header not found");
  return { output: "0x", stateDiff: null, trace: [], vmTrace: null, block: hex(at) };
}

const ANSWERS: Readonly<Record<string, TypicalAnswer>> = { trace_rawTransaction: { result: traced } };

describe("trace_rawTransaction at the head block, through two Reth nodes a block apart", () => {
  let apart: NodesBlockApart | undefined;
  let gw: RunningGateway;
  beforeAll(async () => {
    apart = await nodesBlockApart("eth", H, softwareWith(ANSWERS));
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  it("traces on the block it names, and at the head when it names none, every time", async () => {
    const rpc = async (params: unknown[]) => {
      const answer = await gw.call("eth", `/${KEYS.dedicated}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "trace_rawTransaction", params }),
      });
      const body = answer.json as { result?: { block?: string }; error?: { message?: string } };
      return body.error?.message ?? body.result?.block;
    };
    const head = await gw.call("eth", `/${KEYS.dedicated}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
    });
    expect((head.json as { result: string }).result).toBe(hex(H + 1));
    for (const params of [
      [RAW, ["trace"], hex(H + 1)],
      [RAW, ["trace"], { blockNumber: hex(H + 1) }],
      [RAW, ["trace"]],
    ]) {
      const answers: unknown[] = [];
      for (let i = 0; i < 8; i++) answers.push(await rpc(params));
      expect(answers, JSON.stringify(params.slice(2))).toEqual(Array(8).fill(hex(H + 1)));
    }
  });
});
