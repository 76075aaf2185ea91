import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// Every call in a batch sees one head (docs/upstreams.md), with the cache on too: an answer kept at the
// head is not mixed with a node's answer read at a newer head. Probes are rare here, so the served head
// rises only from answers, as between two probes.
describe("a batch answered partly from the cache, on a real anvil", () => {
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

  it("a kept latest block goes to the node with a call that missed, and both name one head", async () => {
    expect(await single("eth_getBlockByNumber", ["latest", false])).toBe("miss");
    expect(await single("eth_getBlockByNumber", ["latest", false])).toBe("hit");
    await node.rpc("anvil_mine", ["0x1"]);
    const heads = await headsIn();
    expect(heads.block).toBe(heads.count);
    expect(heads.cache).toBe("miss");
    // both answers are now kept at that head: the same batch is answered from the cache, at one head
    const again = await headsIn();
    expect(again).toEqual({ count: heads.count, block: heads.count, cache: "hit" });
  });
});
