import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import {
  type LoopbackWsNode,
  SharedSubstrateChain,
  startLoopbackWsNode,
  substrateNode,
} from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// polkadot-sdk's server (jsonrpsee, RpcModule::register_subscription) keeps each subscription method's
// subscriptions apart: an unsubscribe looks its id up among its own method's (and its aliases') alone, and
// answers `false` for any other, which goes on. The gateway took every `false` for "the node holds nothing
// under that id" (right for an extrinsic watch the node ended itself) and forgot the subscription: a caller
// whose newHeads subscription was "unsubscribed" with another method's unsubscribe held it live on the node
// and had its slot back, so maxSubscriptions no longer bounded what the node held for the connection (three
// live at a bound of 2, and so on without end), and a move did not make it again.

describe("a subscription an unsubscribe answered false for still lives on the node", () => {
  let chain: SharedSubstrateChain;
  let a: LoopbackWsNode;
  let b: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
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
      limits: { ws: { ...DEFAULT_LIMITS.ws, maxSubscriptions: 2 } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.close(), b?.close()]);
    restore?.();
  });

  it("keeps its slot, and is made again when the node goes", async () => {
    const client = await Client.open(`ws://dot.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const producing = setInterval(() => chain.produce(), 30);
    try {
      const heads = (await client.call("chain_subscribeNewHeads", [])).result as string;
      // another method's unsubscribe: the node answers false and keeps pushing heads
      expect((await client.call("state_unsubscribeRuntimeVersion", [heads])).result).toBe(false);
      expect((await client.call("chain_subscribeFinalizedHeads", [])).error).toBeUndefined();
      const third = await client.call("chain_subscribeNewHeads", []);
      expect(third.error?.data?.code).toBe("TOO_MANY_SUBSCRIPTIONS");
      const live = a.connections.flatMap((connection) => [...connection.subscriptions.keys()]);
      expect(live).toHaveLength(2);
      // the node goes: the heads the client still gets come on, from b
      await a.close();
      const at = client.received.length;
      await client.waitFor((t) => t.includes("chain_newHead") && t.includes(heads), 5_000, at);
      expect(client.isOpen).toBe(true);
    } finally {
      clearInterval(producing);
      client.close();
    }
  }, 20_000);
});
