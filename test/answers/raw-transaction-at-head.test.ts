import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// debug_getRawTransaction(hash), the signed bytes of a transaction by its hash: a node that has not seen the
// block it was mined in (and never had it in its pool) answers null (anvil; geth's DebugAPI
// GetRawTransaction returns nil bytes when neither its chain nor its pool has it), as eth_getTransactionByHash
// does. That one reads at the head (registry reads.atHead); this one went round robin, and a caller that had
// just read the transaction's receipt got null for its bytes every other time.

const GENESIS = 1_700_000_000;

describe("debug_getRawTransaction of a transaction in the head block, two anvils a block apart", () => {
  let a: Anvil;
  let b: Anvil;
  let gw: RunningGateway;
  let restore: () => void;
  let tx = "";
  const heights = new Map<Anvil, number>();
  async function mine(node: Anvil): Promise<void> {
    const next = (heights.get(node) ?? 0) + 1;
    await node.rpc("evm_mine", [GENESIS + 12 * next]);
    heights.set(node, next);
  }
  async function rpc(method: string, params: unknown[]): Promise<unknown> {
    const answer = await gw.call("eth", `/${KEYS.dedicated}`, {
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
    // block 6, on a alone, holds one transfer (anvil's first dev account to 0x…beef), which b never saw
    tx = await a.rpc<string>("eth_sendTransaction", [
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

  it("answers the transaction's bytes after its receipt said block 6, never null", async () => {
    const raw = await a.rpc<string>("debug_getRawTransaction", [tx]);
    expect(raw).toMatch(/^0x02/);
    expect(await b.rpc("debug_getRawTransaction", [tx])).toBeNull();
    expect((await rpc("eth_getTransactionReceipt", [tx])) as { blockNumber: string }).toMatchObject({
      blockNumber: "0x6",
    });
    const answers: unknown[] = [];
    for (let i = 0; i < 10; i++) answers.push(await rpc("debug_getRawTransaction", [tx]));
    expect(answers).toEqual(Array(10).fill(raw));
  });
});
