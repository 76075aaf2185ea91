import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, rpcBody } from "../support/gateway.js";
import { type HistoryPair, startHistoryPair } from "../support/history-pair.js";

// A log range's bound written as decimal text counts as the height it names (docs/upstreams.md, "Ranges":
// Erigon and Besu read `"16"` as block 16, as the range guard does). The archive rules read it as no block:
// `{"fromBlock": "16", "toBlock": "16"}` went as a recent read, and a Besu full node's refusal of blocks past
// its history expiry (RpcErrorType.PRUNED_HISTORY_UNAVAILABLE, code 4444 "Pruned history unavailable")
// reached the caller, where the same range written in hex went to the archive node once more.

const LOG = { address: "0x01", topics: [], data: "0x", blockNumber: "0x10", logIndex: "0x0" };

describe("eth_getLogs with decimal bounds on a full label (loopback full and archive nodes)", () => {
  let pair: HistoryPair;

  beforeAll(async () => {
    pair = await startHistoryPair("eth_getLogs", "Pruned history unavailable", [LOG]);
  });
  afterAll(async () => {
    await pair?.close();
  });

  for (const filter of [
    { fromBlock: "0x10", toBlock: "0x10" },
    { fromBlock: "16", toBlock: "16" },
    { fromBlock: "16", toBlock: "0x10" },
  ])
    it(`${JSON.stringify(filter)}: the archive node answers it, never the full node's refusal`, async () => {
      const before = pair.asked(pair.archive);
      const answer = await pair.gw.call("eth", `/${KEYS.all}`, {
        body: rpcBody("eth_getLogs", [filter], 7),
      });
      expect(answer.text).not.toContain("Pruned history");
      expect(answer.json).toEqual({ jsonrpc: "2.0", id: 7, result: [LOG] });
      expect(answer.headers["x-upstream-tier"]).toBe("archive");
      expect(pair.asked(pair.archive) - before).toBe(1);
    });
});
