import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
});
