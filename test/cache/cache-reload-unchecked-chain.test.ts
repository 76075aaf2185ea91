import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { GatewayConfig } from "../../src/config/types.js";
import { eventually } from "../support/eventually.js";
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
    const counted = async (outcome: string) =>
      gw.metric("gateway_cache_requests_total", { label: "atleta", outcome });
    const [hits, misses] = [await counted("hit"), await counted("miss")];
    gw.gateway.reload({ ...gw.config, upstreams: { atleta: [right.url] } } as GatewayConfig, gw.keys);
    // the new config's only node says 0x924
    const after = await chainId(3);
    expect(after.json).toMatchObject({ result: "0x924" });
    // the answers stay behind; the counts go on: a counter that went back reads as a restart to Prometheus
    expect(await counted("hit")).toBe(hits);
    expect(await counted("miss")).toBe(misses + 1);
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

// The same label's heights: the old chain's finalized height, carried, kept the new chain's blocks under it
// as final (each kept for good once read), and its served head made reads wait for a head no node had.
describe("a reload that moves a label without a chain check to a chain at lower heights", () => {
  const chain = (head: number, finalized: number) =>
    jsonRpcResponder({
      eth_chainId: "0x924",
      eth_blockNumber: `0x${head.toString(16)}`,
      eth_getBlockByNumber: (params: unknown) => {
        const tag = (params as unknown[])[0];
        const number = tag === "finalized" ? finalized : tag === "latest" ? head : Number(tag);
        return {
          number: `0x${number.toString(16)}`,
          hash: `0x${"ab".repeat(31)}${(number % 256).toString(16).padStart(2, "0")}`,
          parentHash: `0x${"00".repeat(32)}`,
        };
      },
    });
  let old: LoopbackNode;
  let fresh: LoopbackNode;
  let gw: RunningGateway;
  const group = () => gw.gateway.upstreams.group("atleta", "/");

  beforeAll(async () => {
    old = await startLoopbackNode(chain(0x1000, 0xfc0));
    fresh = await startLoopbackNode(chain(0x20, 0x10));
    gw = await startGateway({
      upstreams: { atleta: [old.url] },
      cache: { ...DEFAULT_CACHE, enabled: true },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await eventually(() => group()?.finalized === 0xfc0, 5_000, "the old chain's finalized height");
  });
  afterAll(async () => {
    await gw?.close();
    await old?.close();
    await fresh?.close();
  });

  it("learns the new nodes' finalized height and head, not the old chain's", async () => {
    gw.gateway.reload({ ...gw.config, upstreams: { atleta: [fresh.url] } } as GatewayConfig, gw.keys);
    await eventually(() => group()?.finalized === 0x10, 5_000, "the new chain's finalized height");
    expect(group()?.served.height).toBe(0x20);
  });
});
