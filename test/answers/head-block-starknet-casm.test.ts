import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { NodeRejection, type NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
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

  beforeAll(async () => {
    const endpoint = endpointsByLabel.get("starknet") as Endpoint;
    nodes.push(
      ...(await Promise.all(
        [H + 1, H].map((h) =>
          startLoopbackNode(softwareNode(endpoint, nodeState(endpoint, h), [""], { answers: ANSWERS })),
        ),
      )),
    );
    gw = await startGateway({
      upstreams: {
        starknet: nodes.map((node, n) => ({ url: node.url, name: n === 0 ? "ahead" : "behind" })),
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
    await everyNodeInRotation(gw, "starknet", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((node) => node.close()));
  });

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
