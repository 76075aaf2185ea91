import { createPublicClient, defineChain, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// The head a caller sees never goes backwards (docs/upstreams.md, "Answers across nodes"). Two real anvil
// nodes follow one chain (started alike, mined with the same timestamps, so their blocks are the same),
// `a` one block ahead of `b`, both in rotation (one block of lag is within the label's threshold). Without
// the rule, round robin alternates their heads: N+1, N, N+1.

const GENESIS = 1_700_000_000;
/** The label's registry chainId: the prober serves only a node that answers it. */
const ETH_MAINNET = 1;
/** anvil's first dev account. */
const DEV_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

describe("the head never goes backwards across two nodes one block apart (real anvil)", () => {
  let a: Anvil;
  let b: Anvil;
  let gw: RunningGateway;
  let restore: () => void;
  /** Each node's height, to mine the next block with the same timestamp on both. */
  const heights = new Map<Anvil, number>();

  async function mine(node: Anvil): Promise<void> {
    const next = (heights.get(node) ?? 0) + 1;
    await node.rpc("evm_mine", [GENESIS + 12 * next]);
    heights.set(node, next);
  }

  /** b catches up with a, then a goes one block ahead again. */
  async function advance(): Promise<void> {
    while ((heights.get(b) ?? 0) < (heights.get(a) ?? 0)) await mine(b);
    await mine(a);
  }

  async function rpc(method: string, params: unknown[]): Promise<unknown> {
    const answer = await gw.call("eth", `/${KEYS.all}`, {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      headers: { "content-type": "application/json" },
    });
    const body = answer.json as { result?: unknown; error?: unknown };
    if (body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
    return body.result;
  }

  beforeAll(async () => {
    restore = resolveTestHosts();
    [a, b] = await Promise.all([
      startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: ETH_MAINNET }),
      startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: ETH_MAINNET }),
    ]);
    for (let i = 0; i < 5; i++) await Promise.all([mine(a), mine(b)]);
    await mine(a);
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    restore?.();
  });

  it("100 eth_blockNumber calls, the nodes moving on between them, never go backwards", async () => {
    const seen: number[] = [];
    for (let i = 0; i < 100; i++) {
      if (i % 10 === 9) await advance();
      seen.push(Number(BigInt(String(await rpc("eth_blockNumber", [])))));
    }
    const backwards = seen.filter((height, i) => i > 0 && height < (seen[i - 1] as number));
    expect(backwards).toEqual([]);
    // and it keeps up: a node that is a block behind may answer until the prober or an answer shows a's block
    expect(seen.at(-1)).toBeGreaterThanOrEqual((heights.get(a) ?? 0) - 1);
  });

  it("100 eth_getBlockByNumber calls, by latest and then by the number just seen, never go backwards or get null", async () => {
    let last = 0;
    for (let i = 0; i < 50; i++) {
      if (i % 5 === 4) await advance();
      const latest = (await rpc("eth_getBlockByNumber", ["latest", false])) as { number: string } | null;
      expect(latest, `latest, call ${i}`).not.toBeNull();
      const height = Number(BigInt((latest as { number: string }).number));
      expect(height).toBeGreaterThanOrEqual(last);
      last = height;
      const same = (await rpc("eth_getBlockByNumber", [`0x${height.toString(16)}`, false])) as {
        number: string;
      } | null;
      expect(same, `block ${height}, call ${i}`).not.toBeNull();
      expect(Number(BigInt((same as { number: string }).number))).toBe(height);
    }
  });

  it("viem's waitForTransactionReceipt and watchBlockNumber work across them, every block once and in order", async () => {
    const chain = defineChain({
      id: ETH_MAINNET,
      name: "eth",
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [`http://eth.${DOMAIN}:${gw.port}/${KEYS.all}`] } },
    });
    const client = createPublicClient({ chain, transport: http(), pollingInterval: 50 });
    const seen: bigint[] = [];
    // emitMissed: a loaded machine may let two blocks pass between polls; every block must still come once
    const unwatch = client.watchBlockNumber({
      onBlockNumber: (n) => seen.push(n),
      poll: true,
      emitMissed: true,
    });
    // generous deadlines: viem polls every 50 ms, which a loaded machine stretches
    await eventually(() => seen.length > 0, 15_000, "the first block number");

    // a transaction both nodes will mine in the same block: a first, b a moment later (b catches up first,
    // so that the blocks it mines to get there do not take the transaction)
    while ((heights.get(b) ?? 0) < (heights.get(a) ?? 0)) await mine(b);
    const account = privateKeyToAccount(DEV_KEY);
    const raw = await account.signTransaction({
      chainId: ETH_MAINNET,
      type: "eip1559",
      to: account.address,
      value: 1n,
      nonce: 0,
      gas: 21_000n,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1n,
    });
    const hash = (await a.rpc<string>("eth_sendRawTransaction", [raw])) as `0x${string}`;
    await b.rpc("eth_sendRawTransaction", [raw]);
    // the receipt is read at the head (reads.atHead): asked while b is a block behind, only a answers it
    const receipt = client.waitForTransactionReceipt({ hash, pollingInterval: 50, timeout: 15_000 });
    await mine(a);
    // b mines its block only once the client has seen a's: the client polls while b is a block behind
    const seenA = () => seen.at(-1) === BigInt(heights.get(a) ?? 0);
    await eventually(seenA, 15_000, "the client at a's new block");
    await mine(b);
    expect((await receipt).blockNumber).toBe(BigInt(heights.get(a) ?? 0));

    for (let i = 0; i < 3; i++) {
      await advance();
      await eventually(seenA, 15_000, "the client at a's new block");
    }
    const last = BigInt(heights.get(a) ?? 0);
    await eventually(
      () => seen.at(-1) === last,
      15_000,
      `the last block number ${last}, seen ${seen.join(" ")}`,
    );
    unwatch();
    const first = seen[0] as bigint;
    expect(seen).toEqual(Array.from({ length: Number(last - first) + 1 }, (_, i) => first + BigInt(i)));
    // six waits on viem's polling, each allowed 15 s on a loaded machine: more than the default 20 s in all
  }, 60_000);

  it("a block one node has is found by its hash whichever node the read lands on", async () => {
    await advance();
    // the block a just mined, which no answer through the gateway has shown yet
    const latest = await a.rpc<{ hash: string; number: string }>("eth_getBlockByNumber", ["latest", false]);
    expect(Number(latest.number)).toBe(heights.get(a));
    // b is a block behind: it answers null for this hash
    expect(await b.rpc("eth_getBlockByHash", [latest.hash, false])).toBeNull();
    for (let i = 0; i < 20; i++) {
      const block = (await rpc("eth_getBlockByHash", [latest.hash, false])) as { hash: string } | null;
      expect(block?.hash, `call ${i}`).toBe(latest.hash);
    }
    // and in a batch, beside a call that any node answers
    for (let i = 0; i < 10; i++) {
      const answer = await gw.call("eth", `/${KEYS.all}`, {
        method: "POST",
        body: JSON.stringify([
          { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] },
          { jsonrpc: "2.0", id: 2, method: "eth_getBlockByHash", params: [latest.hash, false] },
        ]),
        headers: { "content-type": "application/json" },
      });
      expect(answer.json, `batch ${i}`).toMatchObject([
        { id: 1, result: "0x1" },
        { id: 2, result: { hash: latest.hash } },
      ]);
    }
  });

  it("a WebSocket connection on the node behind reads the head and the block an HTTP caller was served", async () => {
    await advance();
    const group = gw.gateway.upstreams.group("eth", "/");
    const ahead = group?.members.find((m) => m.name === "a");
    // the connection opens on b, the node behind: a is cordoned for its upgrade alone
    ahead?.health.cordon(true);
    let client: Client | undefined;
    try {
      client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    } finally {
      ahead?.health.cordon(false);
    }
    try {
      await everyNodeInRotation(gw);
      // an HTTP caller is served a's head (once the prober or an answer has shown it: b's until then)
      const served = heights.get(a) as number;
      await eventually(
        async () => Number(await rpc("eth_blockNumber", [])) === served,
        5_000,
        "a's head served",
      );
      const hex = `0x${served.toString(16)}`;
      expect(Number((await client.call("eth_blockNumber")).result)).toBe(served);
      expect((await client.call("eth_getBlockByNumber", [hex, false])).result).toMatchObject({ number: hex });
      const dev = privateKeyToAccount(DEV_KEY).address;
      expect((await client.call("eth_getBalance", [dev, hex])).error).toBeUndefined();
      // and so does a batch of such reads (web3.js' BatchRequest, a hand-made batch): it read b's head
      client.send(
        JSON.stringify([
          { jsonrpc: "2.0", id: "n", method: "eth_blockNumber", params: [] },
          { jsonrpc: "2.0", id: "b", method: "eth_getBlockByNumber", params: ["latest", false] },
          { jsonrpc: "2.0", id: "v", method: "eth_getBalance", params: [dev, hex] },
        ]),
      );
      const batch = JSON.parse(await client.waitFor((text) => text.includes('"id":"n"'))) as {
        id: string;
        result?: unknown;
        error?: unknown;
      }[];
      const byId = new Map(batch.map((answer) => [answer.id, answer]));
      expect(Number(byId.get("n")?.result)).toBeGreaterThanOrEqual(served);
      expect(
        Number((byId.get("b")?.result as { number: string } | undefined)?.number),
      ).toBeGreaterThanOrEqual(served);
      expect(byId.get("v")?.error).toBeUndefined();
      // its own node stays b: a subscription there goes on
      expect((await client.call("eth_subscribe", ["newHeads"])).error).toBeUndefined();
    } finally {
      client.close();
    }
  });
});
