import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode, waitUntil } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// Besu numbers subscription ids node-wide, in order. Two connections subscribe on `a` (0x1000 and 0x1001);
// `a` goes, and `b`, which has handed out one id since it started, makes the first connection's again as
// 0x1001. That connection's client then unsubscribes 0x1001, the other connection's id, which it never held:
// its own subscription, known to it as 0x1000, must go on.
describe("an unsubscribe naming an id the client does not hold, after a move", () => {
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

  it("does not end the client's own subscription, which the new node knows by that id", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const heads = (await client.call("eth_subscribe", ["newHeads"])).result;
    expect(heads).toBe("0x1000");
    const other = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const othersId = (await other.call("eth_subscribe", ["newHeads"])).result;
    expect(othersId).toBe("0x1001");
    other.close();
    await a.close();
    await waitUntil(
      () => b.connections.some((c) => c.isOpen && c.subscriptions.has("0x1001")),
      3_000,
      "moved to b",
    );
    expect((await client.call("eth_chainId")).result).toBe("0x1");
    const own = b.connections
      .find((c) => c.isOpen && c.subscriptions.has("0x1001"))
      ?.subscriptions.get("0x1001");
    const answer = await client.call("eth_unsubscribe", [othersId]);
    expect(answer.result).not.toBe(true);
    expect(own?.active).toBe(true);
    const from = client.received.length;
    own?.notify({ number: "0x11", parentHash: `0x${"44".repeat(32)}` });
    const pushed = JSON.parse(await client.waitFor((t) => t.includes("eth_subscription"), 3_000, from));
    expect(pushed.params.subscription).toBe(heads);
    client.close();
  });
});
