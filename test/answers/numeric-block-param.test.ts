import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// A block number written as a JSON number (`eth_getBlockByNumber(6, false)`): anvil and Reth (alloy's
// BlockNumberOrTag) read it as block 6, exactly as "0x6". The gateway's range guard already counts such a
// number as a block (src/answers/range-plan.ts `plainHeight`), and so does the routing of a single-block read
// (registry `plainNumbers`): it went round robin to a node one block behind, which answered null or
// BlockOutOfRange for a block the caller had just seen as the head.

const GENESIS = 1_700_000_000;

describe("a block number sent as a JSON number goes only to a node that has the block (real anvil)", () => {
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
  async function rpc(
    method: string,
    params: unknown[],
    key: string = KEYS.all,
  ): Promise<{ result?: unknown; error?: unknown }> {
    const answer = await gw.call("eth", `/${key}`, {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      headers: { "content-type": "application/json" },
    });
    return answer.json as { result?: unknown; error?: unknown };
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

  it("anvil itself reads the JSON number as the block", async () => {
    const own = (await a.rpc("eth_getBlockByNumber", [6, false])) as { number: string } | null;
    expect(own?.number).toBe("0x6");
  });

  it("eth_getBlockByNumber(6) after eth_blockNumber said 0x6 never answers null", async () => {
    expect((await rpc("eth_blockNumber", [])).result).toBe("0x6");
    const numbers: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      const answer = await rpc("eth_getBlockByNumber", [6, false]);
      numbers.push((answer.result as { number?: string } | null)?.number ?? answer.result ?? answer.error);
    }
    expect(numbers).toEqual(Array(10).fill("0x6"));
  });

  it("eth_getBlockTransactionCountByNumber(6) never answers BlockOutOfRangeError", async () => {
    const answers: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      const answer = await rpc("eth_getBlockTransactionCountByNumber", [6]);
      answers.push(answer.result ?? answer.error);
    }
    expect(answers).toEqual(Array(10).fill("0x1"));
  });

  it("trace_block(6) always traces block 6's transfer (a key whose plan has the trace API)", async () => {
    const own = (await a.rpc("trace_block", [6])) as unknown[];
    expect(own).toHaveLength(1);
    const answers: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      const answer = await rpc("trace_block", [6], KEYS.dedicated);
      answers.push(Array.isArray(answer.result) ? answer.result.length : (answer.result ?? answer.error));
    }
    expect(answers).toEqual(Array(10).fill(1));
  });
});
