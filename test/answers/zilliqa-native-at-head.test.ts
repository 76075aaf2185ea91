import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";

// Zilliqa's native API answers from the node's latest state (Zilliqa/zq2 zilliqa/src/api/zilliqa.rs:
// get_balance reads the account at the latest block, {"balance": "<Qa>", "nonce": n}, which zilliqa-js's
// blockchain.getBalance reads to sign the next transaction with nonce + 1; get_num_tx_blocks the latest
// block's number + 1, as text). The `zil` mount serves it beside the EVM API, whose reads alone the mount
// took: the native calls went to any node, and behind two nodes a block apart a caller that read the head
// (GetLatestTxBlock) got the nonce before its transaction in the head block, and a block count that went back.
// Here the account's nonce, and the count, follow the node's height.

const H = 6_000_000;

describe("Zilliqa's native API through two nodes a block apart", () => {
  let apart: NodesBlockApart | undefined;
  let gw: RunningGateway;
  beforeAll(async () => {
    apart = await nodesBlockApart(
      "zil",
      H,
      softwareWith({
        GetBalance: { result: ({ height }) => ({ balance: "1000000000000", nonce: height }) },
        GetNumTxBlocks: { result: ({ height }) => String(height + 1) },
      }),
    );
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  const rpc = async (method: string, params: unknown[], id: number) => {
    const got = await gw.call("zil", `/${KEYS.all}/`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      headers: { "content-type": "application/json" },
    });
    return (got.json as { result?: unknown }).result;
  };
  const head = async (id: number) =>
    (await rpc("GetLatestTxBlock", [], id)) as { header?: { BlockNum?: string } } | undefined;

  for (const [method, params, read, expected] of [
    [
      "GetBalance",
      ["9bfec715a6bd658fcb62b0f8cc9bfa2ade71434a"],
      (r: unknown) => (r as { nonce?: number }).nonce,
      H + 1,
    ],
    ["GetNumTxBlocks", [], (r: unknown) => r, String(H + 2)],
  ] as const)
    it(`${method} after GetLatestTxBlock answers from that block, never the one before`, async () => {
      const seen: unknown[] = [];
      for (let i = 0; i < 8; i++) {
        expect((await head(i))?.header?.BlockNum).toBe(String(H + 1));
        seen.push(read(await rpc(method, [...params], i)));
      }
      expect(seen).toEqual(seen.map(() => expected));
    });
});
