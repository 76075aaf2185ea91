import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import type { LoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// NIS1's GET /mosaic/supply answers the node's namespace cache at its last block
// (NemProject/nem nis MosaicController.getMosaicSupply: NamespaceCacheUtils.getMosaicEntry(namespaceCache,
// id).getSupply(); an id it does not know yet is IllegalArgumentException "mosaic id … is unknown", a 400).
// The registry reads an account's mosaics at the head (reads.atHeadPaths /account/mosaic/owned: "a node
// behind answers them without the head block's transfer"), but not the supply (nor /mosaic/definition,
// /namespace, /namespace/root/page, /account/importances): after a MosaicSupplyChangeTransaction in the
// head block a caller that saw that head reads the old supply from the node a block behind.

const H = 4_000_000;
const MOSAIC = { namespaceId: "gwtest", name: "coin" };

const ANSWERS: Readonly<Record<string, TypicalAnswer>> = {
  "GET /mosaic/supply": {
    // a supply change of +100 in block H + 1
    result: (state: NodeState) => ({ mosaicId: MOSAIC, supply: state.height >= H + 1 ? 1_000 : 900 }),
  },
};

describe("NEM mosaic supply after a supply change in the head block", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;

  let apart: NodesBlockApart | undefined;
  beforeAll(async () => {
    apart = await nodesBlockApart("nem", H, softwareWith(ANSWERS));
    nodes.push(...apart.nodes);
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  it("answers the supply at the head the caller saw", async () => {
    const head = await gw.call("nem", `/${KEYS.all}/chain/height`, { method: "GET" });
    expect((head.json as { height: number }).height).toBe(H + 1);
    const supplies: number[] = [];
    for (let i = 0; i < 8; i++) {
      const got = await gw.call("nem", `/${KEYS.all}/mosaic/supply?mosaicId=gwtest:coin`, { method: "GET" });
      supplies.push((got.json as { supply: number }).supply);
    }
    expect(supplies).toEqual(Array(8).fill(1_000));
  });
});
