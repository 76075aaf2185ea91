import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode, waitUntil } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// An unsubscribe in flight when its node goes is answered `true` by the move (its subscription was on the
// lost node: docs/websocket.md). A message is counted once it is answered; that one never was: no usage
// record for the key, no gateway_requests_total, and the compute units its quota held at the check stayed
// held with no usage to match them.
describe("an unsubscribe in flight when its node goes", () => {
  let a: LoopbackWsNode;
  let b: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  const records: { calls: number; errors: number; units: number }[] = [];
  const never = () => new Promise(() => {});

  beforeAll(async () => {
    restore = resolveTestHosts();
    a = await startLoopbackWsNode(evmNode({ eth_unsubscribe: never }));
    b = await startLoopbackWsNode(evmNode());
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b", tier: "fallback" },
        ],
      },
      usage: { record: (_key, _label, calls, errors, units) => records.push({ calls, errors, units }) },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.close(), b?.close()]);
    restore?.();
  });

  it("is counted once the move answers it", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      const id = (await client.call("eth_subscribe", ["newHeads"])).result;
      await waitUntil(() => records.length === 1, 3_000, "the subscribe counted");
      client.send(JSON.stringify({ jsonrpc: "2.0", id: 77, method: "eth_unsubscribe", params: [id] }));
      await waitUntil(
        () => a.connections.some((c) => c.messages.some((m) => m.includes("eth_unsubscribe"))),
        3_000,
        "the unsubscribe at a",
      );
      await a.close();
      expect((await client.answerTo("77", 5_000)).result).toBe(true);
      await waitUntil(() => records.length === 2, 3_000, "the unsubscribe counted");
      expect(records[1]).toMatchObject({ calls: 1, errors: 0 });
      expect(await gw.metric("gateway_requests_total", { method: "eth_unsubscribe" })).toBe(1);
    } finally {
      client.close();
    }
  });
});
