import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// docs/upstreams.md "A caller's own write": for a minute after its write, a caller's calls go first to the
// node that took it, whose mempool has the transaction. With the cache on, the writer's lookup of its
// transaction by hash (a `blockIn` read, which the cache takes) joined another caller's identical call in
// flight, which another node, without the transaction, answered null: over HTTP, in a batch, and on a
// WebSocket. Such a call now shares no flight (cache-read.ts `ownNode`).

const GENESIS = 1_700_000_000;
// anvil's first two dev accounts: one writes over HTTP, one on a WebSocket
const HTTP_WRITER = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const WS_WRITER = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const TO = `0x${"ab".repeat(20)}`;
/** How long a node's front holds a lookup by hash: the other caller's is in flight when the writer's comes. */
const SLOW_MS = 300;
const ROUNDS = 8;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Front {
  readonly url: string;
  readonly server: Server;
  /** Lookups by hash it received. */
  byHash: number;
}

/** An HTTP front of an anvil that holds each eth_getTransactionByHash for SLOW_MS. */
async function slowFront(target: string): Promise<Front> {
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    if (body.includes("eth_getTransactionByHash")) {
      front.byHash++;
      await sleep(SLOW_MS);
    }
    const answer = await fetch(target, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    res.writeHead(answer.status, { "content-type": "application/json" });
    res.end(await answer.text());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const front: Front = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    byHash: 0,
  };
  return front;
}

function payment(key: string): Promise<string> {
  return new Wallet(key).signTransaction({
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

describe("a writer's lookup of its transaction while another caller's identical one is in flight", () => {
  let nodes: Anvil[];
  let fronts: Front[];
  let gw: RunningGateway;
  let restore: (() => void) | undefined;
  const lookups = () => fronts.reduce((sum, front) => sum + front.byHash, 0);
  const post = async (key: string, body: unknown) =>
    JSON.parse((await gw.call("eth", `/${key}`, { body: JSON.stringify(body) })).text) as unknown;
  const lookup = (key: string, hash: string) =>
    post(key, { jsonrpc: "2.0", id: 7, method: "eth_getTransactionByHash", params: [hash] }) as Promise<{
      result: unknown;
    }>;
  /** Another caller's lookup of `hash`, once it is at a node: most often one without the transaction. */
  const another = async (hash: string) => {
    const before = lookups();
    const answer = lookup(KEYS.dedicated, hash);
    await eventually(() => lookups() > before, 2_000, "the other caller's lookup at a node");
    return answer;
  };
  /** Whether a node took the transaction `hash`: one of the three alone. */
  const holders = async (hash: string) =>
    (await Promise.all(nodes.map((node) => node.rpc("eth_getTransactionByHash", [hash])))).filter(
      (found) => found !== null,
    ).length;

  beforeAll(async () => {
    restore = resolveTestHosts();
    // three anvils of one chain that mine only when told and gossip nothing: a transaction stays in the
    // mempool of the node that took it
    nodes = await Promise.all(
      [0, 1, 2].map(() => startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 })),
    );
    for (const node of nodes) await node.rpc("evm_mine", [GENESIS + 12]);
    fronts = await Promise.all(nodes.map((node) => slowFront(node.url)));
    gw = await startGateway({
      upstreams: {
        eth: fronts.map((front, i) => ({
          url: front.url,
          ws: (nodes[i] as Anvil).url.replace("http:", "ws:"),
          name: `n${i}`,
        })),
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
    await everyNodeInRotation(gw);
  }, 60_000);
  afterAll(async () => {
    await gw?.close();
    for (const front of fronts ?? []) front.server.close();
    await Promise.all((nodes ?? []).map((node) => node.stop()));
    restore?.();
  });

  it("finds it over HTTP, alone and in a batch, every time", async () => {
    const sent = (await post(KEYS.all, {
      jsonrpc: "2.0",
      id: 1,
      method: "eth_sendRawTransaction",
      params: [await payment(HTTP_WRITER)],
    })) as { result: string };
    const hash = sent.result;
    expect(hash).toMatch(/^0x/);
    expect(await holders(hash)).toBe(1);

    const single: unknown[] = [];
    const inBatch: unknown[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const other = another(hash);
      single.push((await lookup(KEYS.all, hash)).result === null ? null : "found");
      await other;
      const batchOther = another(hash);
      const answers = (await post(KEYS.all, [
        { jsonrpc: "2.0", id: 1, method: "eth_getTransactionByHash", params: [hash] },
        { jsonrpc: "2.0", id: 2, method: "eth_chainId", params: [] },
      ])) as { id: number; result: unknown }[];
      inBatch.push(answers.find((answer) => answer.id === 1)?.result === null ? null : "found");
      await batchOther;
    }
    const every = Array(ROUNDS).fill("found");
    expect({ single, inBatch }).toEqual({ single: every, inBatch: every });
  }, 60_000);

  it("finds it on the WebSocket it wrote on, every time", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.ethOnly}`);
    try {
      const sent = await client.call("eth_sendRawTransaction", [await payment(WS_WRITER)]);
      const hash = sent.result as string;
      expect(hash).toMatch(/^0x/);
      expect(await holders(hash)).toBe(1);
      const seen: unknown[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const other = another(hash);
        seen.push((await client.call("eth_getTransactionByHash", [hash])).result === null ? null : "found");
        await other;
      }
      expect(seen).toEqual(Array(ROUNDS).fill("found"));
    } finally {
      client.close();
    }
  }, 60_000);
});
