import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";

// The head a caller sees never goes backwards (docs/upstreams.md, "Answers across nodes"). Two real anvil
// nodes follow one chain (started alike, mined with the same timestamps, so their blocks are the same),
// `a` one block ahead of `b`, both in rotation (one block of lag is within the label's threshold). Without
// the rule, round robin alternates their heads: N+1, N, N+1.

const GENESIS = 1_700_000_000;
/** The label's registry chainId: the prober serves only a node that answers it. */
const ETH_MAINNET = 1;

describe("the head never goes backwards across two nodes one block apart (real anvil)", () => {
  let a: Anvil;
  let b: Anvil;
  let gw: RunningGateway;
  /** Each node's height, to mine the next block with the same timestamp on both. */
  const heights = new Map<Anvil, number>();

  async function mine(node: Anvil): Promise<void> {
    const next = (heights.get(node) ?? 0) + 1;
    await node.rpc("evm_mine", [GENESIS + 12 * next]);
    heights.set(node, next);
  }

  /** b catches up with a, then a goes one block ahead again. */
  async function advance(): Promise<void> {
    while ((heights.get(b) ?? 0) < (heights.get(a) ?? 0)) await mine(b);
    await mine(a);
  }

  async function rpc(method: string, params: unknown[]): Promise<unknown> {
    const answer = await gw.call("eth", `/${KEYS.all}`, {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      headers: { "content-type": "application/json" },
    });
    const body = answer.json as { result?: unknown; error?: unknown };
    if (body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
    return body.result;
  }

  beforeAll(async () => {
    [a, b] = await Promise.all([
      startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: ETH_MAINNET }),
      startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: ETH_MAINNET }),
    ]);
    for (let i = 0; i < 5; i++) await Promise.all([mine(a), mine(b)]);
    await mine(a);
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await eventually(
      async () => (await gw.metric("gateway_upstream_state", { label: "eth", state: "healthy" })) === 2,
      10_000,
      "both nodes in rotation",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it("100 eth_blockNumber calls, the nodes moving on between them, never go backwards", async () => {
    const seen: number[] = [];
    for (let i = 0; i < 100; i++) {
      if (i % 10 === 9) await advance();
      seen.push(Number(BigInt(String(await rpc("eth_blockNumber", [])))));
    }
    const backwards = seen.filter((height, i) => i > 0 && height < (seen[i - 1] as number));
    expect(backwards).toEqual([]);
    expect(seen.at(-1)).toBe(heights.get(a));
  });

  it("100 eth_getBlockByNumber calls, by latest and then by the number just seen, never go backwards or get null", async () => {
    let last = 0;
    for (let i = 0; i < 50; i++) {
      if (i % 5 === 4) await advance();
      const latest = (await rpc("eth_getBlockByNumber", ["latest", false])) as { number: string } | null;
      expect(latest, `latest, call ${i}`).not.toBeNull();
      const height = Number(BigInt((latest as { number: string }).number));
      expect(height).toBeGreaterThanOrEqual(last);
      last = height;
      const same = (await rpc("eth_getBlockByNumber", [`0x${height.toString(16)}`, false])) as {
        number: string;
      } | null;
      expect(same, `block ${height}, call ${i}`).not.toBeNull();
      expect(Number(BigInt((same as { number: string }).number))).toBe(height);
    }
  });
});
