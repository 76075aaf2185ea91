import type { Agent as HttpAgent } from "node:http";
import { FetchRequest, JsonRpcProvider, Network, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { sdkUrl, testHostHttpAgent } from "../sdk/resolve.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";

// A transaction waits in the mempool of the node that took it until it is mined and gossiped. Two real anvils
// of one chain that gossip nothing (as nodes of two providers may not, for a while): after an ethers
// sendTransaction, the caller's pending nonce and its lookup of the transaction alternated between the node
// that had it and the one that did not, and ethers signed the next payment with the same nonce. The node
// that took a caller's write now gets its next calls first (upstream/writer-nodes.ts).

const GENESIS = 1_700_000_000;
// anvil's first dev account
const DEV_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const TO = `0x${"ab".repeat(20)}`;

describe("a caller's reads after its write (two anvils that gossip nothing, ethers)", () => {
  let nodes: Anvil[];
  let gw: RunningGateway;
  let agent: HttpAgent;
  let provider: JsonRpcProvider;

  beforeAll(async () => {
    nodes = await Promise.all(
      [0, 1].map(() => startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 })),
    );
    // one chain, block for block; nothing is mined while the test runs, so a transaction stays pending
    for (const node of nodes) await node.rpc("evm_mine", [GENESIS + 12]);
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
