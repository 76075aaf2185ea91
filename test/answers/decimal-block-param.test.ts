import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// A block number written as decimal text (`eth_getBlockByNumber("6", false)`): anvil reads it as block 6
// (alloy's LenientBlockNumberOrTag, anvil's lenient_block_number: a u64 or its decimal string), and so does
// Nethermind (BlockParameterConverter reads "100" as block 100 unless strict hex is set); geth refuses it. The
// range guard already counted such text as the height it says (src/answers/range-plan.ts `plainHeight`); a
// single-block read went round robin to the node a block behind, which answered null or BlockOutOfRangeError
// for the block the caller had just been told was the head.

const GENESIS = 1_700_000_000;

describe("a block number sent as decimal text goes only to a node that has the block (real anvil)", () => {
  let a: Anvil;
  let b: Anvil;
  let gw: RunningGateway;
  let restore: () => void;
  const heights = new Map<Anvil, number>();
  async function mine(node: Anvil): Promise<void> {
    const next = (heights.get(node) ?? 0) + 1;
    await node.rpc("evm_mine", [GENESIS + 12 * next]);
    heights.set(node, next);
  }
  async function rpc(method: string, params: unknown[], key: string = KEYS.all): Promise<unknown> {
    const answer = await gw.call("eth", `/${key}`, {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      headers: { "content-type": "application/json" },
    });
    const body = answer.json as { result?: unknown; error?: unknown };
    return body.error ?? body.result;
  }

  beforeAll(async () => {
    restore = resolveTestHosts();
    [a, b] = await Promise.all([
      startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 }),
      startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 }),
    ]);
    for (let i = 0; i < 5; i++) await Promise.all([mine(a), mine(b)]);
    // block 6, on a alone, holds one transfer (anvil's first dev account to 0x…beef)
    await a.rpc("eth_sendTransaction", [
      {
        from: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
        to: "0x000000000000000000000000000000000000beef",
        value: "0x1234",
      },
    ]);
    await mine(a); // a at 6, b at 5: one block of lag, both in rotation
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw);
  }, 60_000);
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    restore?.();
  });

  it("anvil itself reads the decimal text as the block", async () => {
    expect(((await a.rpc("eth_getBlockByNumber", ["6", false])) as { number: string }).number).toBe("0x6");
  });

  it("each read of block 6 by its decimal text, after eth_blockNumber said 0x6, answers block 6", async () => {
    expect(await rpc("eth_blockNumber", [])).toBe("0x6");
    // (anvil reads eth_getTransactionByBlockNumberAndIndex's block strictly: "hex string without 0x prefix")
    const reads: [string, unknown[], unknown][] = [
      ["eth_getBlockByNumber", ["6", false], "0x6"],
      ["eth_getBlockTransactionCountByNumber", ["6"], "0x1"],
      ["eth_getUncleCountByBlockNumber", ["6"], "0x0"],
      ["eth_getUncleByBlockNumberAndIndex", ["6", "0x0"], null],
    ];
    for (const [method, params, want] of reads) {
      const answers: unknown[] = [];
      for (let i = 0; i < 10; i++) {
        const answer = await rpc(method, params);
        answers.push((answer as { number?: string } | null)?.number ?? answer);
      }
      expect(answers, method).toEqual(Array(10).fill(want));
    }
  });
});
