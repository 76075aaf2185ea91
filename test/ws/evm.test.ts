import { WebSocketProvider } from "ethers";
import { createPublicClient, webSocket } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// Real SDK subscriptions through the gateway to a real node: blocks mined on anvil arrive as notifications.
describe("EVM subscriptions over WebSocket", () => {
  let anvil: Anvil;
  let gw: RunningGateway;
  let restore: () => void;
  let url: string;

  beforeAll(async () => {
    restore = resolveTestHosts();
    anvil = await startAnvil();
    gw = await startGateway({ upstreams: { eth: [anvil.url] } });
    url = `ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`;
  });
  /** Waits until the gateway holds `count` subscriptions on eth, each answered by the node. */
  const subscribed = (count: number) =>
    eventually(
      async () => (await gw.metric("gateway_websocket_subscriptions", { label: "eth" })) === count,
      5_000,
      `${count} subscription(s) in place`,
    );
  afterAll(async () => {
    await gw?.close();
    await anvil?.stop();
    restore?.();
  });

  it("a log query wider than the split limit is refused alone, never sent to the node; a narrow one goes", async () => {
    const client = await Client.open(url);
    try {
      const wide = await client.call("eth_getLogs", [{ fromBlock: "0x0", toBlock: "0x186a0" }]);
      expect(wide.error).toMatchObject({
        code: -32005,
        data: { code: "BLOCK_RANGE_TOO_LARGE", blocks: 100_001, splitAbove: 2_000 },
      });
      expect((await client.call("eth_getLogs", [{ fromBlock: "0x0", toBlock: "0x10" }])).result).toEqual([]);
      // in a batch, the wide call alone: the other is answered
      client.ws.send(
        JSON.stringify([
          {
            jsonrpc: "2.0",
            id: 1,
            method: "eth_getLogs",
            params: [{ fromBlock: "0x0", toBlock: "0x186a0" }],
          },
          { jsonrpc: "2.0", id: 2, method: "eth_chainId", params: [] },
        ]),
      );
      await eventually(() => client.received.some((m) => m.startsWith("[")), 3_000, "the batch's answer");
      const answers = JSON.parse(client.received.find((m) => m.startsWith("[")) as string) as {
        id: number;
        result?: unknown;
        error?: { data: { code: string } };
      }[];
      expect(answers.find((a) => a.id === 1)?.error?.data.code).toBe("BLOCK_RANGE_TOO_LARGE");
      expect(answers.find((a) => a.id === 2)?.result).toBe("0x7a69");
    } finally {
      client.close();
    }
  });

  it("viem watchBlockNumber sees mined blocks", async () => {
    const client = createPublicClient({ transport: webSocket(url) });
    const seen: bigint[] = [];
    const done = new Promise<void>((resolve) => {
      const unwatch = client.watchBlockNumber({
        emitOnBegin: false,
        onBlockNumber(n) {
          seen.push(n);
          if (seen.length === 3) {
            unwatch();
            resolve();
          }
        },
      });
    });
    // once the subscription is in place, mine: each block after the one before it has arrived
    await subscribed(1);
    for (let i = 1; i <= 3; i++) {
      await anvil.rpc("evm_mine");
      await eventually(() => seen.length >= i, 5_000, `block ${i} seen`);
    }
    await done;
    expect(seen).toHaveLength(3);
    expect(seen[1]).toBe((seen[0] as bigint) + 1n);
    expect(await client.getChainId()).toBe(31337);
    await (client.transport as { getRpcClient?: () => Promise<{ close(): void }> })
      .getRpcClient?.()
      .then((c) => c.close());
    await subscribed(0);
  });

  it("ethers WebSocketProvider on('block') sees mined blocks", async () => {
    const provider = new WebSocketProvider(`${url}/`);
    const blocks: number[] = [];
    const done = new Promise<void>((resolve) => {
      provider.on("block", (n: number) => {
        blocks.push(n);
        if (blocks.length === 2) resolve();
      });
    });
    await subscribed(1);
    for (let i = 1; i <= 2; i++) {
      await anvil.rpc("evm_mine");
      await eventually(() => blocks.length >= i, 5_000, `block ${i} seen`);
    }
    await done;
    expect(blocks[1]).toBe((blocks[0] as number) + 1);
    await provider.destroy();
  });

  it("a call whose id anvil cannot read gets anvil's error by its own id, and holds no slot after it", async () => {
    const client = await Client.open(url);
    try {
      // anvil reads ids as strings or u64: it answers these with "id":null
      for (const id of ["1.5", "123456789012345678901234"]) {
        client.ws.send(`{"jsonrpc":"2.0","id":${id},"method":"eth_chainId","params":[]}`);
        const answer = await client.answerTo(id);
        expect(answer.error?.message).toMatch(/invalid request/i);
      }
      // a hundred more, one at a time: the connection's 100 calls in flight are not used up by them
      for (let i = 0; i < 101; i++) {
        client.ws.send(`{"jsonrpc":"2.0","id":${i}.25,"method":"eth_chainId","params":[]}`);
        await client.answerTo(`${i}.25`);
      }
      // two at once: each gets one of the node's errors (alike), and neither holds its slot
      for (let i = 0; i < 60; i++) {
        client.ws.send(`{"jsonrpc":"2.0","id":${i}.125,"method":"eth_chainId","params":[]}`);
        client.ws.send(`{"jsonrpc":"2.0","id":${i}.375,"method":"eth_chainId","params":[]}`);
        await Promise.all([client.answerTo(`${i}.125`), client.answerTo(`${i}.375`)]);
      }
      expect((await client.call("eth_chainId")).result).toBe("0x7a69");
      // anvil refuses a whole batch that holds such an id: each of its calls gets the error, in an array
      client.ws.send(
        '[{"jsonrpc":"2.0","id":9.5,"method":"eth_chainId","params":[]},{"jsonrpc":"2.0","id":7,"method":"eth_chainId","params":[]}]',
      );
      const batch = JSON.parse(await client.waitFor((text) => text.includes('"id":9.5')));
      expect(Array.isArray(batch)).toBe(true);
      expect(batch.map((a: { id: unknown }) => a.id)).toEqual([9.5, 7]);
      expect((await client.call("eth_chainId")).result).toBe("0x7a69");
    } finally {
      client.close();
    }
  });
});
