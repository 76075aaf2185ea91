import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AnswerCache, FINAL } from "../../src/cache/answer-cache.js";
import { DEFAULT_CACHE } from "../../src/config/defaults.js";
import type { GatewayConfig } from "../../src/config/types.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// A reload (SIGHUP) builds a new cache for each label: its final answers come along, so a cordon or a node
// added does not send every cached read back to the nodes.
describe("the answer cache across a reload", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_chainId: "0x1", eth_blockNumber: "0x10" }));
    gw = await startGateway({ upstreams: { eth: [node.url] }, cache: { ...DEFAULT_CACHE, enabled: true } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("keeps its final answers", async () => {
    const chainId = (id: number) => gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_chainId", [], id) });
    const asked = () => node.requests.filter((r) => r.body.includes("eth_chainId")).length;
    expect((await chainId(1)).headers["x-cache"]).toBe("miss");
    expect((await chainId(2)).headers["x-cache"]).toBe("hit");
    gw.gateway.reload({ ...gw.config } as GatewayConfig, gw.keys);
    const after = await chainId(3);
    expect(after.headers["x-cache"]).toBe("hit");
    expect(after.json).toEqual({ jsonrpc: "2.0", id: 3, result: "0x1" });
    expect(asked()).toBe(1);
  });

  it("counts as evicted none of the answers a smaller new budget leaves behind", () => {
    const settings = { ...DEFAULT_CACHE, enabled: true, followsBlocks: true };
    const old = new AnswerCache({ ...settings, maxBytes: 1_000_000 });
    const entry = {
      before: Buffer.alloc(1_000),
      after: Buffer.alloc(0),
      epoch: FINAL,
      expiresAt: Number.POSITIVE_INFINITY,
      tier: undefined,
    };
    for (let i = 0; i < 50; i++) old.set(`k${i}`, entry);
    const small = new AnswerCache({ ...settings, maxBytes: 10_000 });
    small.carryFrom(old);
    expect(small.counts.evicted).toBe(old.counts.evicted);
    expect(small.bytes).toBeGreaterThan(0);
    expect(small.bytes).toBeLessThanOrEqual(10_000);
  });
});
