import { ApiPromise, WsProvider } from "@polkadot/api";
import type { ApiOptions } from "@polkadot/api/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import {
  type LoopbackWsNode,
  SharedSubstrateChain,
  startLoopbackWsNode,
  substrateNode,
  waitUntil,
} from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// @polkadot/api through the gateway while the Substrate node under it goes. Two loopback Polkadot nodes
// follow one simulated chain (each pushes the current head on subscribe, then every new one, and finds
// headers by hash); the connection is on `a` (`b` is a fallback). Blocks made while the connection moves
// reach neither socket: the gateway fills them in from `b`.

describe("Substrate subscriptions survive the loss of their node (@polkadot/api)", () => {
  let chain: SharedSubstrateChain;
  let a: LoopbackWsNode;
  let b: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  let url: string;

  beforeAll(async () => {
    restore = resolveTestHosts();
  });
  afterAll(() => restore?.());

  async function start(): Promise<void> {
    chain = new SharedSubstrateChain();
    a = await startLoopbackWsNode(substrateNode({ chain }));
    b = await startLoopbackWsNode({
      ...substrateNode({ chain }),
      subscriptionId: (n) => `Bb${n.toString(36).padStart(14, "0")}`,
    });
    gw = await startGateway({
      upstreams: {
        dot: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b", tier: "fallback" },
        ],
      },
    });
    url = `ws://dot.${DOMAIN}:${gw.port}/${KEYS.all}`;
  }
  async function stop(): Promise<void> {
    await gw?.close();
    await Promise.all([a?.close(), b?.close()]);
  }

  it("api.rpc.chain.subscribeNewHeads sees every head once, in order, on the socket it opened; unsubscribe reaches the new node under its own id", async () => {
    await start();
    const provider = new WsProvider(url) as NonNullable<ApiOptions["provider"]>;
    let disconnects = 0;
    provider.on("disconnected", () => disconnects++);
    const api = await ApiPromise.create({ provider, noInitWarn: true });
    try {
      const numbers: number[] = [];
      const unsubscribe = await api.rpc.chain.subscribeNewHeads((header) => {
        numbers.push(header.number.toNumber());
      });
      const producing = setInterval(() => chain.produce(), 30);
      await waitUntil(() => numbers.length >= 5, 3_000, "five heads from a");
      await a.close();
      // made while the connection moves: pushed by no node
      for (let i = 0; i < 3; i++) chain.produce();
      const at = numbers.length;
      await waitUntil(() => numbers.length >= at + 10, 5_000, "ten more heads after the move");
      clearInterval(producing);

      const first = numbers[0] as number;
      expect(numbers).toEqual(numbers.map((_, i) => first + i));
      expect(disconnects).toBe(0);
      const onB = b.latest();
      // the gap was filled from b, walking back by parent hash
      expect(onB.messages.some((m) => m.includes("chain_getHeader") && m.includes("e7e7"))).toBe(true);

      const heads = [...onB.subscriptions.values()].find((s) => s.method === "chain_subscribeNewHead");
      expect(heads?.id.startsWith("Bb")).toBe(true);
      unsubscribe();
      await waitUntil(
        () => onB.methods().includes("chain_unsubscribeNewHead"),
        3_000,
        "the unsubscribe at b",
      );
      const sent = onB.messages.find((m) => m.includes("chain_unsubscribeNewHead"));
      expect(JSON.parse(sent as string).params).toEqual([heads?.id]);
      expect(heads?.active).toBe(false);
    } finally {
      await api.disconnect();
      await stop();
    }
  });

  it("a connection following chainHead_v1_follow holds node state: it is closed with 1014, not moved", async () => {
    await start();
    try {
      const client = await Client.open(url);
      await client.call("chainHead_v1_follow", [false]);
      const onB = b.connections.length;
      await a.close();
      const closed = await client.closed;
      expect(closed.code).toBe(1014);
      expect(b.connections.length).toBe(onB);
    } finally {
      await stop();
    }
  });
});
