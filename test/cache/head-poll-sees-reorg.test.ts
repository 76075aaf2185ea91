import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// docs/cache.md, "The head, and reorgs": when a node's head goes back, what was read at the head dies, and
// under the finalized height the final answers too. A dApp polls eth_blockNumber (ethers, viem), and its
// poll was often the first to see a shortened chain: the answer lowered the node's head without moving the
// head's epoch, and the prober, reading against that lowered head, never saw it go back. Answers of blocks
// the chain no longer has were then served from the cache, final ones for good. Each test reads right
// after the poll, before a probe (100 ms apart) is likely to have seen the revert itself.

const OTHER = "0x70997970c51812dc3a010c7d01b0e0aec37d6c8f";

describe("a head poll that is first to see the chain go back", () => {
  let node: Anvil;
  let gw: RunningGateway;
  let restore: () => void;
  async function call(method: string, params: unknown[]) {
    const answer = await gw.call("eth", `/${KEYS.all}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    return { result: (answer.json as { result?: unknown }).result, cache: answer.headers["x-cache"] };
  }
  const head = async () => (await call("eth_blockNumber", [])).result as string;
  const finalized = () => gw.gateway.upstreams.group("eth", "/")?.finalized ?? -1;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startAnvil({ chainId: 1 });
    await node.rpc("anvil_mine", ["0x50"]);
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, name: "a" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 5_000 },
    });
    await eventually(async () => (await head()) === (await node.rpc("eth_blockNumber")), 5_000, "the head");
  });
  afterAll(async () => {
    await gw?.close();
    await node?.stop();
    restore?.();
  });

  it("ends the answers read at the replaced head", async () => {
    const snapshot = await node.rpc<string>("evm_snapshot", []);
    await node.rpc("anvil_mine", ["0x2"]);
    await node.rpc("anvil_setBalance", [OTHER, "0x1"]);
    await node.rpc("evm_mine", []);
    const high = await node.rpc<string>("eth_blockNumber", []);
    await eventually(async () => (await head()) === high, 3_000, "the high head");
    await eventually(
      async () => (await call("eth_getBalance", [OTHER, "latest"])).cache === "hit",
      3_000,
      "the balance kept",
    );
    expect((await call("eth_getBlockByNumber", ["latest", false])).result).toMatchObject({ number: high });

    // three blocks gone, none in their place
    await node.rpc("evm_revert", [snapshot]);
    const low = await node.rpc<string>("eth_blockNumber", []);
    expect(await head()).toBe(low);
    expect((await call("eth_getBalance", [OTHER, "latest"])).result).toBe("0x0");
    expect((await call("eth_getBlockByNumber", ["latest", false])).result).toMatchObject({ number: low });
  });

  it("ends the final answers of the blocks taken away, and learns the finalized height again", async () => {
    const snapshot = await node.rpc<string>("evm_snapshot", []);
    const base = Number(await node.rpc<string>("eth_blockNumber", []));
    await node.rpc("anvil_mine", ["0x50"]);
    const block = `0x${(base + 5).toString(16)}`;
    await eventually(() => finalized() >= base + 5, 3_000, "the block final");
    await call("eth_getBlockByNumber", [block, false]);
    expect((await call("eth_getBlockByNumber", [block, false])).cache).toBe("hit");

    await node.rpc("evm_revert", [snapshot]);
    expect(await head()).toBe(`0x${base.toString(16)}`);
    expect(finalized()).toBeLessThan(base + 5);
    // the node has no such block now
    expect((await call("eth_getBlockByNumber", [block, false])).result).toBeNull();
  });
});
