import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { everyNodeInRotation } from "../support/rotation.js";

// geth's debug_storageRangeAt(blockNrOrHash, txIndex, address, keyStart, maxResult) walks the contract's
// storage trie for up to maxResult slots and builds the answer in memory (go-ethereum eth/api_debug.go
// storageRangeAt: `for i := 0; i < maxResult && it.Next(); i++`, no cap): a maxResult of a million read a
// busy token's whole storage in one call, which reached the node as sent. Thor runs the same walk and
// refuses more than 1 000 (vechain/thor api/debug/debug.go defaultMaxStorageResult); the registry's
// reads.pageSizes holds the call to that, refused PAGE_TOO_LARGE before any node sees it.

const ETH_MAINNET = 1;
const CONTRACT = "0x6b175474e89094c44da98b954eedeac495271d0f";
const START = `0x${"00".repeat(32)}`;

describe("debug_storageRangeAt's maxResult is held to 1 000 slots (real anvil)", () => {
  let anvil: Anvil;
  let node: RecordingNode;
  let gw: RunningGateway;

  const storageRange = (maxResult: unknown, id = 3) =>
    gw.call("eth", `/${KEYS.dedicated}`, {
      method: "POST",
      body: JSON.stringify({
        jsonrpc: "2.0",
        id,
        method: "debug_storageRangeAt",
        params: ["latest", 0, CONTRACT, START, maxResult],
      }),
      headers: { "content-type": "application/json" },
    });
  const asked = () =>
    node.calls
      .filter((call) => call.method === "debug_storageRangeAt")
      .map((call) => (call.params as unknown[])[4]);

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: ETH_MAINNET });
    node = await startRecordingNode(anvil.url);
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, name: "node-0" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    await anvil?.stop();
  });

  it("past 1 000 it is refused with the limit and no node is asked; 1 000 and less reach the node as sent", async () => {
    node.calls.length = 0;
    for (const [maxResult, size] of [
      [1_000_000, 1_000_000],
      [1001, 1001],
      ["0xf4240", 1_000_000],
    ] as const) {
      const wide = await storageRange(maxResult);
      expect(wide.status, String(maxResult)).toBe(413);
      expect(wide.json).toMatchObject({
        id: 3,
        error: {
          code: -32005,
          data: { code: "PAGE_TOO_LARGE", method: "debug_storageRangeAt", size, refuseAbove: 1000 },
        },
      });
    }
    expect(asked()).toEqual([]);
    for (const maxResult of [1000, 10]) {
      const narrow = await storageRange(maxResult);
      expect(narrow.json, String(maxResult)).not.toMatchObject({
        error: { data: { code: "PAGE_TOO_LARGE" } },
      });
    }
    expect(asked()).toEqual([1000, 10]);
  });
});
