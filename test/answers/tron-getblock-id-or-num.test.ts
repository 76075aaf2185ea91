import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Endpoint } from "../../src/registry/types.js";
import { tronBlock } from "../support/chain-answers.js";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import type { Responder } from "../support/loopback-node.js";
import { type NodesBlockApart, nodesBlockApart } from "../support/nodes-block-apart.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// TronWeb's getBlock(id or number) posts /wallet/getblock {"id_or_num": …}; a caller reads the head block,
// then that block again by its id, or reads the solidified block and then that one by number on
// /walletsolidity/getblock. Through two java-tron nodes one block apart, the node behind answers neither.
//
// java-tron (tronprotocol/java-tron 1e35f79, framework/src/main/java/org/tron/core/):
// - Wallet.getBlock(BlockReq): head = chainBaseManager.getHeadBlockNum(); a number past it is null, which
//   GetBlockServlet.fillResponse prints as "{}"; a 64-hex id whose number (its first 8 bytes, BlockId.getNum)
//   is past it throws IllegalArgumentException("id must be legal block hash."), which fillResponse prints as
//   200 {"Error":"id must be legal block hash."}; no id_or_num is getNowBlock();
// - services/interfaceOnSolidity/http/GetBlockOnSolidityServlet runs the same servlet through
//   WalletOnSolidity.futureGet (Chainbase.Cursor.SOLIDITY): its head is the node's solidified block, so a
//   block number past that is {} (HttpApiOnSolidityService: /walletsolidity/getblock; HttpApiOnPBFTService
//   registers it at /walletpbft/getblock the same way).
// These nodes solidify the block 19 below their head (chain-answers.ts).

const H = 8_000_000;
const SOLID = 19;

function getBlock(top: (height: number) => number): TypicalAnswer {
  return {
    result: ({ height }, body) => {
      const head = top(height);
      const named = (body as { id_or_num?: unknown } | undefined)?.id_or_num;
      if (named === undefined || named === "") return tronBlock(head);
      const text = String(named);
      if (/^\d+$/.test(text)) return Number(text) > head ? {} : tronBlock(Number(text));
      if (text.length !== 64 || Number.parseInt(text.slice(0, 16), 16) > head)
        return { Error: "id must be legal block hash." };
      return tronBlock(Number.parseInt(text.slice(0, 16), 16));
    },
  };
}

const EXTRA: Readonly<Record<string, TypicalAnswer>> = {
  "POST /wallet/getblock": getBlock((height) => height),
  "POST /walletsolidity/getblock": getBlock((height) => height - SOLID),
};

function tron(endpoint: Endpoint, height: number): Responder {
  return softwareNode(endpoint, nodeState(endpoint, height), [""], { answers: EXTRA });
}

describe("TRON getblock by id_or_num through two java-tron nodes a block apart", () => {
  let apart: NodesBlockApart | undefined;
  let gw: RunningGateway;
  beforeAll(async () => {
    apart = await nodesBlockApart("trx", H, tron);
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  const post = async (path: string, body: unknown) =>
    (await gw.call("trx", `/${KEYS.all}${path}`, { body: JSON.stringify(body) })).json as {
      blockID?: string;
      block_header?: { raw_data: { number: number } };
    };

  it("the head block just read is found by its id", async () => {
    const found: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      const top = await post("/wallet/getnowblock", {});
      expect(top.block_header?.raw_data.number).toBe(H + 1);
      found.push((await post("/wallet/getblock", { id_or_num: top.blockID })).block_header?.raw_data.number);
    }
    expect(found).toEqual(found.map(() => H + 1));
  });

  it("the solidified block just read is found by number on /walletsolidity/getblock", async () => {
    const found: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      const solid = (await post("/walletsolidity/getnowblock", {})).block_header?.raw_data.number;
      expect(solid).toBe(H + 1 - SOLID);
      const block = await post("/walletsolidity/getblock", { id_or_num: String(solid) });
      found.push(block.block_header?.raw_data.number);
    }
    expect(found).toEqual(found.map(() => H + 1 - SOLID));
  });
  it("the solidified head block read by getblock with no id_or_num never goes back", async () => {
    const found: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      const solid = (await post("/walletsolidity/getnowblock", {})).block_header?.raw_data.number;
      expect(solid).toBe(H + 1 - SOLID);
      found.push((await post("/walletsolidity/getblock", {})).block_header?.raw_data.number);
    }
    expect(found).toEqual(found.map(() => H + 1 - SOLID));
  });
});
