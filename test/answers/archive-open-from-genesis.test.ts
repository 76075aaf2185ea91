import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, rpcBody } from "../support/gateway.js";
import { type HistoryPair, startHistoryPair } from "../support/history-pair.js";

// trace_filter without fromBlock scans from genesis on every node that serves it (registry `openFrom:
// genesis`: Reth and anvil `from_block.unwrap_or(0)`, Erigon 0 when nil), and the range guard counts it so.
// Its read of history did not: the archive rules read a left-out start as the head, a recent block, so
// `{"toBlock": "0x10"}` went as any read does, and a full node's refusal of the old blocks (Reth's
// EthApiError::PrunedHistoryUnavailable, code 4444 "pruned history unavailable", past its history expiry)
// reached the caller, where the same range written `{"fromBlock": "0x0", "toBlock": "0x10"}` went to the
// archive node once more (docs/upstreams.md, "Archive where it is needed": a range by its start).

const TRACE = {
  action: { from: "0x01", to: "0x02", value: "0x0", gas: "0x5208", input: "0x", callType: "call" },
  blockNumber: 16,
  result: { gasUsed: "0x0", output: "0x" },
  subtraces: 0,
  traceAddress: [],
  type: "call",
};

describe("trace_filter from genesis on a full label (loopback full and archive nodes)", () => {
  let pair: HistoryPair;

  beforeAll(async () => {
    pair = await startHistoryPair("trace_filter", "pruned history unavailable", [TRACE]);
  });
  afterAll(async () => {
    await pair?.close();
  });

  for (const filter of [
    { fromBlock: "0x0", toBlock: "0x10" },
    { toBlock: "0x10" },
    { fromBlock: null, toBlock: "0x10" },
  ])
    it(`${JSON.stringify(filter)}: the archive node answers it, never the full node's refusal`, async () => {
      const before = pair.asked(pair.archive);
      const answer = await pair.gw.call("eth", `/${KEYS.dedicated}`, {
        body: rpcBody("trace_filter", [filter], 7),
      });
      expect(answer.text).not.toContain("pruned history");
      expect(answer.json).toEqual({ jsonrpc: "2.0", id: 7, result: [TRACE] });
      expect(answer.headers["x-upstream-tier"]).toBe("archive");
      expect(pair.asked(pair.archive) - before).toBe(1);
    });
});
