import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// Every call in a batch sees one head (docs/upstreams.md), with the cache on too: an answer kept at the
// head is not mixed with a node's answer read at a newer head. Probes are rare here, so the served head
// rises only from answers, as between two probes.
/** anvil's first and second dev accounts, which it signs for. */
const DEV = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const OTHER = "0x70997970c51812dc3a010c7d01b0e0aec37d6c8f";

describe("answers kept at the head of one anvil, and what a call sees next", () => {
  let node: Anvil;
  let gw: RunningGateway;
  let restore: () => void;

  const single = async (method: string, params: unknown[]) =>
    (
      await gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      })
    ).headers["x-cache"];

  const headsIn = async () => {
    const answer = await gw.call("eth", `/${KEYS.all}`, {
      body: JSON.stringify([
        { jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] },
        { jsonrpc: "2.0", id: 2, method: "eth_getBlockByNumber", params: ["latest", false] },
      ]),
    });
    const [count, block] = answer.json as [{ result: string }, { result: { number: string } }];
    return {
      count: Number(count.result),
      block: Number(block.result.number),
      cache: answer.headers["x-cache"],
    };
  };

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startAnvil({ chainId: 1 });
    await node.rpc("anvil_mine", ["0x50"]);
    gw = await startGateway({
      upstreams: { eth: [node.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 60_000 },
    });
    // the start's probe has read the head and the finalized block
    const group = () => gw.gateway.upstreams.group("eth", "/");
    await eventually(
      () => (group()?.finalized ?? -1) >= 0 && (group()?.served.height ?? 0) >= 80,
      5_000,
      "probed",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await node?.stop();
    restore?.();
  });

  it("one node: a receipt in a newer block ends the head kept, and eth_blockNumber does not go back", async () => {
    const head = async () => {
      const answer = await gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
      });
      return Number((answer.json as { result: string }).result);
    };
    const before = await head();
    expect(await single("eth_blockNumber", [])).toBe("hit");
    // a transfer mined by the node alone, its receipt read through the gateway
    const hash = await node.rpc<string>("eth_sendTransaction", [{ from: DEV, to: OTHER, value: "0x1" }]);
    await node.rpc("anvil_mine", ["0x1"]);
    const receipt = await gw.call("eth", `/${KEYS.all}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "eth_getTransactionReceipt", params: [hash] }),
    });
    const mined = Number((receipt.json as { result: { blockNumber: string } }).result.blockNumber);
    expect(mined).toBeGreaterThan(before);
    expect(await head()).toBeGreaterThanOrEqual(mined);
  });

  it("a kept latest block goes to the node with a call that missed, and both name one head", async () => {
    expect(await single("eth_getBlockByNumber", ["latest", false])).toBe("miss");
    expect(await single("eth_getBlockByNumber", ["latest", false])).toBe("hit");
    await node.rpc("anvil_mine", ["0x1"]);
    const heads = await headsIn();
    expect(heads.block).toBe(heads.count);
    expect(heads.cache).toBe("miss");
    // the answers that showed the new head moved its epoch: kept at it from the next batch on, which the
    // cache then answers, at one head
    const again = await headsIn();
    expect([again.count, again.block]).toEqual([heads.count, heads.count]);
    expect(await headsIn()).toEqual({ count: heads.count, block: heads.count, cache: "hit" });
  });
});
