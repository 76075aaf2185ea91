import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode, waitUntil } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A subscribe call sent as a notification (no id) gets no answer, but go-ethereum makes the subscription
// all the same: rpc/handler.go handleCallMsg runs handleCall for a notification, handleCall sends a
// `*_subscribe` to handleSubscribe, which appends its Notifier to the call's notifiers, and handleMsg
// registers and activates them whether or not an answer is written. The loopback node makes one so too.
// The gateway reserved a subscription slot only for a call with an id: such calls passed maxSubscriptions
// without bound (ethermint PR #1041's lesson, limits-and-errors.md 3.4), and the node pushed notifications
// for subscriptions the connection neither counted nor could make again after a move.

describe("a subscribe call sent as a notification", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(evmNode());
    gw = await startGateway({
      limits: { ws: { ...DEFAULT_LIMITS.ws, maxSubscriptions: 3 } },
      upstreams: { eth: [node.url] },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("never reaches the node, so no subscription passes maxSubscriptions; the connection goes on", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      const upstream = node.latest();
      // six at once, one frame each, in one write, and a batch of six notifications
      const notification = '{"jsonrpc":"2.0","method":"eth_subscribe","params":["newHeads"]}';
      for (let i = 0; i < 6; i++) client.send(notification);
      client.send(`[${Array.from({ length: 6 }, () => notification).join(",")}]`);
      // then subscriptions with ids, up to the bound
      for (const id of [1, 2, 3, 4])
        client.send(JSON.stringify({ jsonrpc: "2.0", id, method: "eth_subscribe", params: ["newHeads"] }));
      const answers = await Promise.all(["1", "2", "3", "4"].map((id) => client.answerTo(id)));
      expect(answers.filter((a) => typeof a.result === "string")).toHaveLength(3);
      expect(answers[3]?.error?.data?.code).toBe("TOO_MANY_SUBSCRIPTIONS");
      expect((await client.call("eth_chainId")).result).toBe("0x1");
      await waitUntil(() => upstream.methods().includes("eth_chainId"), 3_000, "the node to have the calls");
      // the node holds the three the connection counts, and no more
      expect(upstream.subscriptions.size).toBe(3);
      // a notification gets no answer, refused or not (JSON-RPC 2.0 4.1): every message has an id asked
      const ids = client.received.map((text) => JSON.stringify((JSON.parse(text) as { id?: unknown }).id));
      expect(ids.every((id) => ["1", "2", "3", "4"].includes(id) || /^\d{4}$/.test(id))).toBe(true);
      expect(client.isOpen).toBe(true);
    } finally {
      client.close();
    }
  });
});
