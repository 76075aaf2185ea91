import { WebSocketProvider } from "ethers";
import { createPublicClient, webSocket } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { resolveTestHosts } from "../support/test-hosts.js";

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
});
