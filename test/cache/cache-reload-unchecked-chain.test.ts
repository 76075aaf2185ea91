import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { GatewayConfig } from "../../src/config/types.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// A user saw a label whose nodes the gateway cannot ask which chain they are on (registry `noChainId`: atleta),
// moved by a reload (SIGHUP) from the wrong network's nodes to the right ones, go on answering the old
// network's final answers from the cache (eth_chainId among them, which wallets sign EIP-155 transactions
// with) until a restart: a reload carried the cache over whatever the new nodes. Such a label's cache is now
// carried only while its nodes stay the same; a label whose chain is checked (eth) keeps carrying it.
describe("a reload that moves a label without a chain check to nodes of another chain", () => {
  let wrong: LoopbackNode;
  let right: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    wrong = await startLoopbackNode(jsonRpcResponder({ eth_chainId: "0x925", eth_blockNumber: "0x10" }));
    right = await startLoopbackNode(jsonRpcResponder({ eth_chainId: "0x924", eth_blockNumber: "0x20" }));
    gw = await startGateway({
      upstreams: { atleta: [wrong.url] },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await wrong?.close();
    await right?.close();
  });

  it("answers the new nodes' chain id, not the old nodes' kept one", async () => {
    const chainId = (id: number) =>
      gw.call("atleta", `/${KEYS.all}`, { body: rpcBody("eth_chainId", [], id) });
    expect((await chainId(1)).json).toMatchObject({ result: "0x925" });
    expect((await chainId(2)).headers["x-cache"]).toBe("hit");
    gw.gateway.reload({ ...gw.config, upstreams: { atleta: [right.url] } } as GatewayConfig, gw.keys);
    // the new config's only node says 0x924
    const after = await chainId(3);
    expect(after.json).toMatchObject({ result: "0x924" });
  });

  it("carries the cache over a reload that keeps its nodes", async () => {
    const chainId = (id: number) =>
      gw.call("atleta", `/${KEYS.all}`, { body: rpcBody("eth_chainId", [], id) });
    expect((await chainId(4)).headers["x-cache"]).toBe("hit");
    const named = { atleta: [{ url: right.url, name: "atleta-right" }] };
    gw.gateway.reload({ ...gw.config, upstreams: named } as GatewayConfig, gw.keys);
    const after = await chainId(5);
    expect(after.json).toMatchObject({ result: "0x924" });
    expect(after.headers["x-cache"]).toBe("hit");
  });
});

describe("a reload that adds a node to a label whose chain is checked", () => {
  let first: LoopbackNode;
  let added: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    first = await startLoopbackNode(jsonRpcResponder({ eth_chainId: "0x1", eth_blockNumber: "0x10" }));
    added = await startLoopbackNode(jsonRpcResponder({ eth_chainId: "0x1", eth_blockNumber: "0x10" }));
    // probes on: they ask each node its chain
    gw = await startGateway({
      upstreams: { eth: [first.url] },
      cache: { ...DEFAULT_CACHE, enabled: true },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 1_000 },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await first?.close();
    await added?.close();
  });

  it("carries the cache over: a node on another chain would be kept out", async () => {
    const chainId = (id: number) => gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_chainId", [], id) });
    expect((await chainId(1)).json).toMatchObject({ result: "0x1" });
    gw.gateway.reload({ ...gw.config, upstreams: { eth: [first.url, added.url] } } as GatewayConfig, gw.keys);
    expect((await chainId(2)).headers["x-cache"]).toBe("hit");
  });
});
