import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode, waitUntil } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// Besu numbers subscription ids node-wide, in order (SubscriptionManager's counter: "0x1", "0x2", …). A
// connection holding two subscriptions, 0x1000 and 0x1001 on `a`, moves to `b`, which has handed out one
// id since it started: it gives the first one 0x1001, the id the second still has until it is made
// again, and the second 0x1002. Each must keep its own notifications under the id the client holds.
describe("a moved subscription given the id another one had on the lost node", () => {
  let a: LoopbackWsNode;
  let b: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    a = await startLoopbackWsNode(evmNode());
    b = await startLoopbackWsNode({ ...evmNode(), subscriptionId: (n) => `0x${(0x1001 + n).toString(16)}` });
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b", tier: "fallback" },
        ],
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.close(), b?.close()]);
    restore?.();
  });

  it("keeps each subscription's notifications under the client's own id", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const heads = (await client.call("eth_subscribe", ["newHeads"])).result;
    const pending = (await client.call("eth_subscribe", ["newPendingTransactions"])).result;
    expect([heads, pending]).toEqual(["0x1000", "0x1001"]);
    await a.close();
    await waitUntil(
      () => b.connections.length === 1 && b.latest().subscriptions.size === 2,
      3_000,
      "moved to b",
    );
    // the move is done once a call sent now is answered
    expect((await client.call("eth_chainId")).result).toBe("0x1");
    const onB = b.latest().subscriptions;
    const from = client.received.length;
    onB.get("0x1001")?.notify({ number: "0x11", parentHash: `0x${"44".repeat(32)}` });
    onB.get("0x1002")?.notify(`0x${"ab".repeat(32)}`);
    await client.waitFor(
      () => client.received.slice(from).filter((t) => t.includes("eth_subscription")).length === 2,
    );
    const pushed = client.received
      .slice(from)
      .filter((t) => t.includes("eth_subscription"))
      .map((t) => JSON.parse(t).params as { subscription: string; result: unknown });
    expect(pushed.map((p) => [p.subscription, typeof p.result])).toEqual([
      [heads, "object"],
      [pending, "string"],
    ]);
    // and each unsubscribe ends its own
    expect((await client.call("eth_unsubscribe", [pending])).result).toBe(true);
    expect(onB.get("0x1002")?.active ?? false).toBe(false);
    expect(onB.get("0x1001")?.active).toBe(true);
    client.close();
  });
});
