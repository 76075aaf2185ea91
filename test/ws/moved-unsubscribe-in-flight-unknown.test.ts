import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode, waitUntil } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// An unsubscribe in flight when the connection's node goes has done its work when it named a subscription
// the client held (that subscription was on the lost node): answered true. One naming an id the client
// never held is answered as any node answers an id it does not know: false (geth, anvil), never true.
describe("an unsubscribe in flight as the connection moves", () => {
  let a: LoopbackWsNode;
  let b: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    // `a` takes unsubscribes and never answers them: they are in flight when it goes
    const base = evmNode();
    a = await startLoopbackWsNode({
      ...base,
      results: { ...base.results, eth_unsubscribe: () => new Promise<never>(() => {}) },
    });
    b = await startLoopbackWsNode(evmNode());
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

  it("is answered true for the client's own subscription, false for an id it never held", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      const own = (await client.call("eth_subscribe", ["newHeads"])).result as string;
      const from = client.received.length;
      client.send(
        JSON.stringify({ jsonrpc: "2.0", id: 71, method: "eth_unsubscribe", params: ["0xdeadbeef"] }),
      );
      client.send(JSON.stringify({ jsonrpc: "2.0", id: 72, method: "eth_unsubscribe", params: [own] }));
      await waitUntil(
        () => a.methods().filter((m) => m === "eth_unsubscribe").length === 2,
        3_000,
        "both unsubscribes at a",
      );
      await a.close();
      const unknown = JSON.parse(await client.waitFor((t) => t.includes('"id":71'), 3_000, from));
      const held = JSON.parse(await client.waitFor((t) => t.includes('"id":72'), 3_000, from));
      expect(held.result).toBe(true);
      expect(unknown.result).toBe(false);
    } finally {
      client.close();
    }
  });
});
