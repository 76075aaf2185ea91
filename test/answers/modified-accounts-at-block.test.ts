import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import { NodeRejection, type NodeState } from "../support/node-software.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// geth's debug_getModifiedAccountsByNumber(startNum, endNum?) and debug_getModifiedAccountsByHash(startHash,
// endHash?): the accounts changed between two blocks, or in one block (its parent to it). They name their
// blocks, the end the newer, and a node that has not reached one answers with its own error (go-ethereum
// eth/api_debug.go: "start block %x not found", "end block %d not found", "end block %x not found"). Neither
// named a block to the gateway: both went round robin, and a caller asking what the head block changed,
// just after being told of it, got the node behind's error every other time.

const H = 21_000_000;
const hex = (n: number) => `0x${n.toString(16)}`;
const blockHash = (n: number) => `0x${n.toString(16).padStart(8, "0")}${"ef".repeat(28)}`;
const changed = (n: number) => [`0x${n.toString(16).padStart(40, "0")}`];

function byNumber(state: NodeState, params: unknown): string[] {
  const [start, end] = params as [number, number | undefined];
  if (start > state.height) throw new NodeRejection(-32000, `start block ${start.toString(16)} not found`);
  if (end !== undefined && end > state.height) throw new NodeRejection(-32000, `end block ${end} not found`);
  return changed(end ?? start);
}

function byHash(state: NodeState, params: unknown): string[] {
  const [start, end] = params as [string, string | undefined];
  const height = (hash: string, which: string): number => {
    for (let n = state.height; n > state.height - 64; n--) if (blockHash(n) === hash) return n;
    throw new NodeRejection(-32000, `${which} block ${hash.slice(2)} not found`);
  };
  const from = height(start, "start");
  return changed(end === undefined ? from : height(end, "end"));
}

const ANSWERS: Readonly<Record<string, TypicalAnswer>> = {
  debug_getModifiedAccountsByNumber: { result: byNumber },
  debug_getModifiedAccountsByHash: { result: byHash },
};

describe("the accounts a block changed, through two geth nodes a block apart", () => {
  let apart: NodesBlockApart | undefined;
  let gw: RunningGateway;
  beforeAll(async () => {
    apart = await nodesBlockApart("eth", H, softwareWith(ANSWERS));
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  it("debug_getModifiedAccountsByNumber and ByHash of the head block answer it every time", async () => {
    const rpc = async (method: string, params: unknown[]) => {
      const answer = await gw.call("eth", `/${KEYS.dedicated}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      const body = answer.json as { result?: unknown; error?: { message?: string } };
      return body.error?.message ?? body.result;
    };
    expect(await rpc("eth_blockNumber", [])).toBe(hex(H + 1));
    const reads: [string, unknown[]][] = [
      ["debug_getModifiedAccountsByNumber", [H + 1]],
      ["debug_getModifiedAccountsByNumber", [H, H + 1]],
      ["debug_getModifiedAccountsByHash", [blockHash(H + 1)]],
      ["debug_getModifiedAccountsByHash", [blockHash(H), blockHash(H + 1)]],
    ];
    for (const [method, params] of reads) {
      const answers: unknown[] = [];
      for (let i = 0; i < 8; i++) answers.push(await rpc(method, params));
      expect(answers, `${method} ${JSON.stringify(params)}`).toEqual(Array(8).fill(changed(H + 1)));
    }
  });
});
