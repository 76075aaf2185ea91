import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, rpcBody } from "../support/gateway.js";
import { type HistoryPair, startHistoryPair } from "../support/history-pair.js";

// EIP-4444's history expiry: a full node without a block's body, receipts or logs answers code 4444. geth
// and Reth write "pruned history unavailable"; Nethermind writes it "Pruned history unavailable"
// (Nethermind.JsonRpc ErrorMessages.PrunedHistoryUnavailable), as Besu (RpcErrorType
// PRUNED_HISTORY_UNAVAILABLE) and Nimbus do. The registry's missingState held the first spelling only, read
// case by case: a Nethermind full node's refusal of an old log range reached the caller, never the archive
// node, and a key without archive access got the node's raw error, not ARCHIVE_REQUIRED.

const LOG = { address: "0x01", topics: [], data: "0x", blockNumber: "0x10", logIndex: "0x0" };

describe("a Nethermind full node's history expiry on a full label (loopback full and archive nodes)", () => {
  let pair: HistoryPair;

  beforeAll(async () => {
    pair = await startHistoryPair("eth_getLogs", "Pruned history unavailable", [LOG]);
  });
  afterAll(async () => {
    await pair?.close();
  });

  for (const filter of [
    { fromBlock: "0x10", toBlock: "0x10" },
    { fromBlock: "0x10", toBlock: "0x20" },
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

  it("a key without archive access gets ARCHIVE_REQUIRED, never the node's error", async () => {
    const answer = await pair.gw.call("eth", `/${KEYS.noArchive}`, {
      body: rpcBody("eth_getLogs", [{ fromBlock: "0x10", toBlock: "0x10" }], 7),
    });
    expect(answer.text).not.toContain("Pruned history");
    expect(answer.json).toMatchObject({
      id: 7,
      error: { data: { code: "ARCHIVE_REQUIRED", archiveLabel: "eth-archive" } },
    });
  });
});
