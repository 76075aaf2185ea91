import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import type { LoopbackNode } from "../support/loopback-node.js";
import { NodeRejection, type NodeState } from "../support/node-software.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// starknet_getCompiledCasm(class_hash) names no block: the node answers from the classes it
// holds at its head. A class declared in the head block is CLASS_HASH_NOT_FOUND (28, "Class hash not
// found", starkware-libs/starknet-specs api/starknet_api_openrpc.json, starknet_getCompiledCasm errors) on
// a node a block behind. The registry reads starknet_getTransactionReceipt / ByHash / Status at the head
// (reads.atHead) for the same reason, but not this one, so a deployer's casm fetch after its declare
// landed in a block fails on the node behind.

const H = 3_000_000;
const CLASS = `0x${"5a".repeat(31)}`; // declared in block H + 1

const ANSWERS: Readonly<Record<string, TypicalAnswer>> = {
  starknet_getCompiledCasm: {
    result: (state: NodeState) => {
      if (state.height < H + 1) throw new NodeRejection(28, "Class hash not found");
      return {
        prime: "0x800000000000011000000000000000000000000000000000000000000000001",
        bytecode: [],
        hints: [],
        entry_points_by_type: { EXTERNAL: [], L1_HANDLER: [], CONSTRUCTOR: [] },
        compiler_version: "2.9.2",
      };
    },
  },
};

describe("Starknet getCompiledCasm of a class declared in the head block", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;

  let apart: NodesBlockApart | undefined;
  beforeAll(async () => {
    apart = await nodesBlockApart("starknet", H, softwareWith(ANSWERS));
    nodes.push(...apart.nodes);
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  it("answers the casm every time, never CLASS_HASH_NOT_FOUND", async () => {
    const head = await gw.call("starknet", `/${KEYS.all}/`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "starknet_blockNumber", params: [] }),
    });
    expect((head.json as { result: number }).result).toBe(H + 1);
    const errors: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      const got = await gw.call("starknet", `/${KEYS.all}/`, {
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: i + 2,
          method: "starknet_getCompiledCasm",
          params: { class_hash: CLASS },
        }),
      });
      const answer = got.json as { error?: unknown };
      if (answer.error !== undefined) errors.push(answer.error);
    }
    expect(errors).toEqual([]);
  });
});
