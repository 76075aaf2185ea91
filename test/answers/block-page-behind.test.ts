import type { Agent as HttpAgent } from "node:http";
import { TronWeb } from "tronweb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { sdkUrl, testHostHttpAgent } from "../sdk/resolve.js";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// What a user saw: a TronWeb block scanner read the head (trx.getCurrentBlock: 1001) and then the blocks up
// to it (trx.getBlockRange(1000, 1001): POST /wallet/getblockbylimitnext {startNum, endNum: 1002}), and half
// the pages came back without block 1001: the page went to a node a block behind, which answers the blocks
// it has. Such a page needs a node that has reached its last block, or the label's served head where it
// runs past it (registry `pageEnds`). tronweb, unmodified, against two java-tron loopback nodes behind `trx`
// one block apart (as the prober read them: both in rotation), answer cache on.
//
// java-tron's GetBlockByLimitNextServlet (framework/src/main/java/org/tron/core/services/http/
// GetBlockByLimitNextServlet.java): for 0 < endNum - startNum <= 100 it answers Util.printBlockList of
// Wallet.getBlocksByLimitNext(startNum, endNum - startNum), the blocks its BlockStore has from startNum
// on (BlockStore.getLimitNumber), as {"block": [...]}: {"block": []} when it has none of them.

const H = 69_000_000;
const blockAt = (num: number) => ({
  blockID: `${num.toString(16).padStart(16, "0")}${"9c".repeat(24)}`,
  block_header: {
    raw_data: {
      number: num,
      txTrieRoot: "0".repeat(64),
      witness_address: "41b487cdc02de90f15ac89a68c82f44cbfe3d915ea",
      parentHash: `${(num - 1).toString(16).padStart(16, "0")}${"9c".repeat(24)}`,
      version: 31,
      timestamp: 1_735_689_600_000 + num * 3000,
    },
    witness_signature: "ab".repeat(65),
  },
});

const EXTRA: Readonly<Record<string, TypicalAnswer>> = {
  "POST /wallet/getblockbylimitnext": {
    result: ({ height }, body) => {
      const { startNum = 0, endNum = 0 } = (body ?? {}) as { startNum?: number; endNum?: number };
      if (!(endNum > 0 && endNum > startNum && endNum - startNum <= 100)) return {};
      const blocks = [];
      for (let n = startNum; n < endNum && n <= height; n++) blocks.push(blockAt(n));
      return { block: blocks };
    },
  },
};

interface AxiosLike {
  defaults: { httpAgent?: HttpAgent };
}

describe("tronweb: getCurrentBlock() then getBlockRange() up to it, two nodes one block apart", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;
  let agent: HttpAgent;
  let tronWeb: TronWeb;

  beforeAll(async () => {
    const endpoint = endpointsByLabel.get("trx") as Endpoint;
    for (let i = 0; i < 2; i++) {
      // the first node a block ahead, as the prober reads them: both healthy, in rotation
      const state = nodeState(endpoint, i === 0 ? H + 1 : H);
      nodes.push(await startLoopbackNode(softwareNode(endpoint, () => state, [""], { answers: EXTRA })));
    }
    gw = await startGateway({
      upstreams: { trx: nodes.map((n, i) => ({ url: n.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
    await everyNodeInRotation(gw);
    agent = testHostHttpAgent();
    tronWeb = new TronWeb({ fullHost: sdkUrl(gw, "trx") });
    for (const provider of [tronWeb.fullNode, tronWeb.solidityNode, tronWeb.eventServer])
      if (provider !== undefined) (provider.instance as unknown as AxiosLike).defaults.httpAgent = agent;
  });
  afterAll(async () => {
    agent?.destroy();
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
  });

  const numbers = async (start: number, end: number) =>
    ((await tronWeb.trx.getBlockRange(start, end)) as { block_header: { raw_data: { number: number } } }[])
      .map((b) => b.block_header.raw_data.number)
      .join();

  it("the block the head call just showed is in the range read right after it", async () => {
    expect((await tronWeb.trx.getCurrentBlock()).block_header.raw_data.number).toBe(H + 1);
    const missed: string[] = [];
    for (let i = 0; i < 10; i++) {
      const got = await numbers(H, H + 1);
      if (got !== `${H},${H + 1}`) missed.push(`[${got}]`);
    }
    expect(missed).toEqual([]);
  });

  it("a range past the head waits for no block: it ends at the head the label served", async () => {
    // endNum H + 51 names blocks no node has made: the page needs the served head, H + 1, and no more
    const started = performance.now();
    expect(await numbers(H - 1, H + 50)).toBe(`${H - 1},${H},${H + 1}`);
    // a wait for a node at H + 50 would last about a block (TRON's 3 s) before it gave up
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
