import type { Agent as HttpAgent } from "node:http";
import { FetchRequest, JsonRpcProvider, Network, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { sdkUrl, testHostHttpAgent } from "../sdk/resolve.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A transaction waits in the mempool of the node that took it until it is mined and gossiped. Two real anvils
// of one chain that gossip nothing (as nodes of two providers may not, for a while): after an ethers
// sendTransaction, the caller's pending nonce and its lookup of the transaction alternated between the node
// that had it and the one that did not, and ethers signed the next payment with the same nonce. The node
// that took a caller's write now gets its next calls first (upstream/writer-nodes.ts).

const GENESIS = 1_700_000_000;
// anvil's first dev account
const DEV_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const TO = `0x${"ab".repeat(20)}`;

/**
 * `count` anvils of one chain, at block 1 each: nothing is mined unless a test mines, so a transaction
 * stays pending in the mempool of the node that took it, and none gossips it to another.
 */
async function chainOf(count: number): Promise<Anvil[]> {
  const nodes = await Promise.all(
    Array.from({ length: count }, () =>
      startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 }),
    ),
  );
  for (const node of nodes) await node.rpc("evm_mine", [GENESIS + 12]);
  return nodes;
}

/** The dev account's first payment to TO, signed: a write the test sends raw. */
function firstPayment(): Promise<string> {
  return new Wallet(DEV_KEY).signTransaction({
    to: TO,
    value: 1n,
    nonce: 0,
    gasLimit: 21_000n,
    maxFeePerGas: 10n ** 10n,
    maxPriorityFeePerGas: 1n,
    chainId: 1n,
    type: 2,
  });
}

describe("a caller's reads after its write (two anvils that gossip nothing, ethers)", () => {
  let nodes: Anvil[];
  let gw: RunningGateway;
  let agent: HttpAgent;
  let provider: JsonRpcProvider;

  beforeAll(async () => {
    nodes = await chainOf(2);
    gw = await startGateway({
      upstreams: { eth: nodes.map((node, i) => ({ url: node.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, enabled: false },
    });
    await everyNodeInRotation(gw);
    agent = testHostHttpAgent();
    const request = new FetchRequest(sdkUrl(gw, "eth"));
    request.getUrlFunc = FetchRequest.createGetUrlFunc({ agent });
    provider = new JsonRpcProvider(request, 1, { staticNetwork: Network.from(1), cacheTimeout: -1 });
  });
  afterAll(async () => {
    provider?.destroy();
    agent?.destroy();
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.stop()));
  });

  it("sees its pending transaction and nonce on every read, and signs the next payment with the next nonce", async () => {
    const wallet = new Wallet(DEV_KEY, provider);
    const first = await wallet.sendTransaction({ to: TO, value: 1n });
    for (let i = 0; i < 8; i++) {
      expect(await provider.getTransactionCount(wallet.address, "pending")).toBe(1);
      expect((await provider.getTransaction(first.hash))?.nonce).toBe(0);
    }
    // ethers takes the nonce from the pending count: one node without the first would give 0 again
    const second = await wallet.sendTransaction({ to: TO, value: 2n });
    expect(second.nonce).toBe(1);
    const pending = await Promise.all(
      nodes.map((node) => node.rpc<string>("eth_getTransactionCount", [wallet.address, "pending"])),
    );
    // both went to the one node: the other has neither
    expect(pending.map((n) => Number(n)).sort()).toEqual([0, 2]);
  });
});

describe("a write that a fallback node took, once a primary is back", () => {
  let nodes: Anvil[];
  let gw: RunningGateway;
  const members = () => gw.gateway.upstreams.group("eth", "/")?.members ?? [];
  const rpc = async (method: string, params: unknown[]) =>
    (
      await gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      })
    ).json as { result?: unknown };

  beforeAll(async () => {
    nodes = await chainOf(2);
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: nodes[0]?.url as string, name: "primary" },
          { url: nodes[1]?.url as string, name: "fallback", tier: "fallback" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, enabled: false },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.stop()));
  });

  it("does not keep the writer's calls on the fallback: fallbacks serve only while no primary is in rotation", async () => {
    const [primary, fallback] = members();
    primary?.health.cordon(true);
    const tx = await firstPayment();
    expect((await rpc("eth_sendRawTransaction", [tx])).result).toMatch(/^0x/);
    primary?.health.cordon(false);
    await eventually(() => primary?.health.inRotation === true, 5_000, "the primary back in rotation");
    const before = fallback?.counts.answered ?? 0;
    for (let i = 0; i < 5; i++) await rpc("eth_blockNumber", []);
    expect((fallback?.counts.answered ?? 0) - before).toBe(0);
  });
});

describe("a writer's node that the probes show a block behind", () => {
  let nodes: Anvil[];
  let gw: RunningGateway;
  const members = () => gw.gateway.upstreams.group("eth", "/")?.members ?? [];

  beforeAll(async () => {
    nodes = await chainOf(2);
    gw = await startGateway({
      upstreams: { eth: nodes.map((node, i) => ({ url: node.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 200 },
      cache: { ...DEFAULT_CACHE, enabled: false },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.stop()));
  });

  it("is waited for, about a block, rather than read past: the other node has no such transaction", async () => {
    const agent = testHostHttpAgent();
    const request = new FetchRequest(sdkUrl(gw, "eth"));
    request.getUrlFunc = FetchRequest.createGetUrlFunc({ agent });
    const provider = new JsonRpcProvider(request, 1, { staticNetwork: Network.from(1), cacheTimeout: -1 });
    try {
      const wallet = new Wallet(DEV_KEY, provider);
      await wallet.sendTransaction({ to: TO, value: 1n });
      const counts = await Promise.all(
        nodes.map((node) => node.rpc<string>("eth_getTransactionCount", [wallet.address, "pending"])),
      );
      const writerAt = counts.findIndex((n) => Number(n) === 1);
      const writer = nodes[writerAt] as Anvil;
      const other = nodes[1 - writerAt] as Anvil;
      // the other node makes the next block first, and the probes see it there
      await other.rpc("evm_mine", [GENESIS + 24]);
      await eventually(
        () => members()[1 - writerAt]?.health.head === 2,
        5_000,
        "the other node's block seen",
      );
      const pending = provider.getTransactionCount(wallet.address, "pending");
      // the writer's node makes its block (with the transaction) a moment later
      await writer.rpc("evm_mine", [GENESIS + 24]);
      expect(await pending).toBe(1);

      // the other node makes one more, and the writer's does not: its read waits about a block for it, then goes on
      await other.rpc("evm_mine", [GENESIS + 36]);
      await eventually(
        () => members()[1 - writerAt]?.health.head === 3,
        5_000,
        "the other node's block seen",
      );
      const started = performance.now();
      await provider.getBlockNumber();
      const took = performance.now() - started;
      const headWaitMs = gw.gateway.upstreams.group("eth", "/")?.headWaitMs ?? 0;
      expect(took).toBeGreaterThanOrEqual(headWaitMs - 50);
      expect(took).toBeLessThan(headWaitMs * 1.7);
    } finally {
      provider.destroy();
      agent.destroy();
    }
  });
});

describe("a writer's read when no node has reached the head served", () => {
  let node: Anvil;
  let gw: RunningGateway;

  beforeAll(async () => {
    [node] = (await chainOf(1)) as [Anvil];
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, name: "only" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, enabled: false },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.stop();
  });

  it("waits for the head once, about a block, then is answered by the node it has", async () => {
    const rpc = (method: string, params: unknown[]) =>
      gw.call("eth", `/${KEYS.all}`, { body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
    const tx = await firstPayment();
    expect((await rpc("eth_sendRawTransaction", [tx])).status).toBe(200);
    // another instance served a head this node has not reached (through Redis, in a deployment)
    const group = gw.gateway.upstreams.group("eth", "/");
    group?.served.raise(5);
    const started = performance.now();
    const r = await rpc("eth_blockNumber", []);
    const took = performance.now() - started;
    expect(r.status).toBe(200);
    const headWaitMs = group?.headWaitMs ?? 0;
    expect(took).toBeGreaterThanOrEqual(headWaitMs - 50);
    expect(took).toBeLessThan(headWaitMs * 1.7);
  });
});

describe("a caller's HTTP reads after its write over a WebSocket (two anvils that gossip nothing)", () => {
  let nodes: Anvil[];
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    nodes = await chainOf(2);
    gw = await startGateway({
      upstreams: {
        eth: nodes.map((node, i) => ({ url: node.url, ws: node.url.replace("http:", "ws:"), name: `n${i}` })),
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, enabled: false },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.stop()));
    restore?.();
  });

  it("go first to the node that took it: its pending nonce and the transaction, every time", async () => {
    const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const sent = await socket.call("eth_sendRawTransaction", [await firstPayment()]);
    expect(typeof sent.result).toBe("string");
    const from = new Wallet(DEV_KEY).address;
    for (let i = 0; i < 8; i++) {
      const nonce = await gw.call("eth", `/${KEYS.all}`, {
        body: rpcBody("eth_getTransactionCount", [from, "pending"]),
      });
      expect((nonce.json as { result: string }).result).toBe("0x1");
      const found = await gw.call("eth", `/${KEYS.all}`, {
        body: rpcBody("eth_getTransactionByHash", [sent.result]),
      });
      expect((found.json as { result: unknown }).result).not.toBeNull();
    }
    socket.close();
  });
});
