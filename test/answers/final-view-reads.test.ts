import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { tronBlock } from "../support/chain-answers.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// java-tron's /walletsolidity/getblockbynum reads the solidified store, which ends 19 blocks below the head
// (chain-answers.ts). A caller reads the solidified head (routed to the node that named the highest), then
// that block by number on /walletsolidity: the node a block behind has not solidified it yet and answers {}
// (GetBlockByNumOnSolidityServlet: a block it does not have), though its head is past it. A block read in a
// finalized view (registry `finalViews`) goes first to the node that named the highest finalized block.

const H = 8_000_000;
const EXTRA: Readonly<Record<string, TypicalAnswer>> = {
  "POST /walletsolidity/getblockbynum": {
    result: ({ height }, body) => {
      const num = Number((body as { num?: unknown } | undefined)?.num);
      return num <= height - 19 ? tronBlock(num) : {};
    },
  },
  // GetBlockByLimitNextOnSolidityServlet: the solidified store's blocks from startNum, up to endNum left out
  "POST /walletsolidity/getblockbylimitnext": {
    result: ({ height }, body) => {
      const { startNum = 0, endNum = 0 } = (body ?? {}) as { startNum?: number; endNum?: number };
      const blocks = [];
      for (let n = startNum; n < endNum && n <= height - 19; n++) blocks.push(tronBlock(n));
      return { block: blocks };
    },
  },
};

describe("TRON solidified block by number, two nodes one block apart", () => {
  let nodes: LoopbackNode[] = [];
  let gw: RunningGateway;
  const trx = endpointsByLabel.get("trx") as Endpoint;

  beforeAll(async () => {
    nodes = await Promise.all(
      [H + 1, H].map((h) =>
        startLoopbackNode(softwareNode(trx, nodeState(trx, h), [""], { answers: EXTRA })),
      ),
    );
    const list = nodes.map((n, i) => ({ url: n.url, name: `n${i}` }));
    gw = await startGateway({
      upstreams: { trx: Object.fromEntries(trx.mounts.map((m) => [m.path, list])) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, undefined, 4000);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
  });

  it("the solidified block just seen is found by number every time", async () => {
    const got: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      const solid = (
        (await gw.call("trx", `/${KEYS.all}/walletsolidity/getnowblock`, { body: "{}" })).json as {
          block_header: { raw_data: { number: number } };
        }
      ).block_header.raw_data.number;
      expect(solid).toBe(H + 1 - 19);
      const block = (
        await gw.call("trx", `/${KEYS.all}/walletsolidity/getblockbynum`, {
          body: JSON.stringify({ num: solid }),
        })
      ).json as { block_header?: { raw_data: { number: number } } };
      got.push(block.block_header?.raw_data.number);
    }
    expect(got).toEqual(got.map(() => H + 1 - 19));
  });

  it("a page of solidified blocks through the solidified head just seen is whole every time", async () => {
    const solid = H + 1 - 19;
    const lengths: number[] = [];
    for (let i = 0; i < 8; i++) {
      const page = (
        await gw.call("trx", `/${KEYS.all}/walletsolidity/getblockbylimitnext`, {
          body: JSON.stringify({ startNum: solid - 5, endNum: solid + 1 }),
        })
      ).json as { block?: unknown[] };
      lengths.push(page.block?.length ?? 0);
    }
    expect(lengths).toEqual(lengths.map(() => 6));
  });
});
