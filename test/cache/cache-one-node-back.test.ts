import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// One node of a label whose head goes back below the label's finalized height (a node restored from an older
// snapshot) beside another still at the head is that node's own trouble: the chain's final blocks stand,
// and so do the answers kept about them. (A chain that went back under every node is test/cache/cache-evm.)
const hex = (n: number) => `0x${n.toString(16)}`;
function evm(head: () => number) {
  const block = (n: number) => ({
    number: hex(n),
    hash: `0x${n.toString(16).padStart(64, "0")}`,
    parentHash: `0x${(n - 1).toString(16).padStart(64, "0")}`,
    transactions: [],
  });
  return jsonRpcResponder({
    eth_chainId: "0x1",
    eth_blockNumber: () => hex(head()),
    eth_getBlockByNumber: (p: unknown) => {
      const tag = (p as unknown[])[0];
      return block(tag === "latest" ? head() : tag === "finalized" ? head() - 64 : Number(tag));
    },
  });
}
describe("one node restored from an older snapshot", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  let bHead = 1000;
  beforeAll(async () => {
    nodes = await Promise.all([startLoopbackNode(evm(() => 1000)), startLoopbackNode(evm(() => bHead))]);
    gw = await startGateway({
      upstreams: { eth: nodes.map((n, i) => ({ url: n.url, name: `n${i}` })) },
      cache: DEFAULT_CACHE,
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await eventually(
      () => (gw.gateway.upstreams.group("eth", "/")?.finalized ?? -1) >= 936,
      5_000,
      "finalized",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((n) => n.close()));
  });
  it("keeps the label's final answers", async () => {
    const get = async () =>
      (
        await gw.call("eth", `/${KEYS.all}`, {
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "eth_getBlockByNumber",
            params: ["0x10", false],
          }),
        })
      ).headers["x-cache"];
    expect([await get(), await get()]).toEqual(["miss", "hit"]);
    bHead = 500; // n1 restored from a snapshot; n0, in rotation, never moved
    const member = () => gw.gateway.upstreams.group("eth", "/")?.members[1];
    await eventually(() => member()?.health.head === 500, 5_000, "n1's head read at 500");
    expect(await get()).toBe("hit");
    expect(gw.gateway.upstreams.group("eth", "/")?.finalized).toBeGreaterThanOrEqual(936);
  });
});
