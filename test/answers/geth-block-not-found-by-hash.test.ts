import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import { NodeRejection, type NodeState } from "../support/node-software.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// A trace of the head block by its hash, through two geth nodes a block apart: the caller saw the block
// (eth_subscribe newHeads, eth_getBlockByNumber("latest")) and asks for its trace by hash. geth's tracers
// answer a block they have not seen with their own wording, not "unknown block" or "header for hash not
// found" (go-ethereum eth/tracers/api.go):
// - debug_traceBlockByHash, and debug_traceCall at {blockHash}: blockByHash ->
//   fmt.Errorf("block %s not found", hash.Hex());
// - debug_intermediateRoots: fmt.Errorf("block %#x not found", hash).
// The node behind's error reached the caller every other time; as its null would, it now sends the read to
// the other node.

const H = 21_000_000;
const hex = (n: number) => `0x${n.toString(16)}`;
const blockHash = (n: number) => `0x${n.toString(16).padStart(8, "0")}${"ef".repeat(28)}`;

/** The block a hash names, on a node at `state.height`; geth's error for one it has not seen. */
function known(state: NodeState, params: unknown, at = 0): number {
  const hash = (params as unknown[])[at];
  const named =
    typeof hash === "object" && hash !== null ? (hash as { blockHash?: unknown }).blockHash : hash;
  for (let n = state.height; n > state.height - 64; n--) if (blockHash(n) === named) return n;
  throw new NodeRejection(-32000, `block ${String(named)} not found`);
}

const ANSWERS: Readonly<Record<string, TypicalAnswer>> = {
  debug_traceBlockByHash: { result: (state, params) => [{ txHash: hex(known(state, params)), result: {} }] },
  debug_intermediateRoots: { result: (state, params) => [blockHash(known(state, params))] },
  debug_traceCall: {
    result: (state, params) => ({
      failed: false,
      gas: known(state, params, 1),
      returnValue: "0x",
      structLogs: [],
    }),
  },
};

describe("geth's 'block … not found' for a block named by hash, two nodes a block apart", () => {
  let apart: NodesBlockApart | undefined;
  let gw: RunningGateway;
  beforeAll(async () => {
    apart = await nodesBlockApart("eth", H, softwareWith(ANSWERS));
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  it("debug_traceBlockByHash, debug_intermediateRoots and debug_traceCall at {blockHash} of the head block answer it", async () => {
    const rpc = async (method: string, params: unknown[]) => {
      const answer = await gw.call("eth", `/${KEYS.dedicated}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      const body = answer.json as { result?: unknown; error?: { message?: string } };
      return body.error?.message ?? body.result;
    };
    expect(await rpc("eth_blockNumber", [])).toBe(hex(H + 1));
    const head = blockHash(H + 1);
    const to = { to: `0x${"ab".repeat(20)}` };
    const reads: [string, unknown[], unknown][] = [
      ["debug_traceBlockByHash", [head, { tracer: "callTracer" }], [{ txHash: hex(H + 1), result: {} }]],
      ["debug_intermediateRoots", [head, {}], [head]],
      [
        "debug_traceCall",
        [to, { blockHash: head }, {}],
        { failed: false, gas: H + 1, returnValue: "0x", structLogs: [] },
      ],
    ];
    for (const [method, params, want] of reads) {
      const answers: unknown[] = [];
      for (let i = 0; i < 8; i++) answers.push(await rpc(method, params));
      expect(answers, method).toEqual(Array(8).fill(want));
    }
  });
});
