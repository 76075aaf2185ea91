import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// docs/websocket.md, "Bounds": past `maxInFlight` "the call gets TOO_MANY_IN_FLIGHT", and a call waiting on
// another caller's identical call (coalesced) "is waiting for its answer too". Such calls took slots of the
// cap when they began to wait, but a call sent to the node counted only the calls sent before it: a
// connection with maxInFlight calls waiting on others sent maxInFlight more to its node, twice its bound.

const ADDRESS = "0x000000000000000000000000000000000000dEaD";

describe("a connection's calls waiting on identical calls in flight", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let receipts = 0;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(
      evmNode({
        eth_getTransactionReceipt: async () => {
          receipts++;
          await gate;
          return null;
        },
        eth_getBalance: async () => {
          await gate;
          return "0x1";
        },
      }),
    );
    gw = await startGateway({
      upstreams: { eth: [node.url] },
      cache: { ...DEFAULT_CACHE, enabled: true },
      limits: { ws: { ...DEFAULT_LIMITS.ws, maxInFlight: 3 } },
    });
  });
  afterAll(async () => {
    release();
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("take slots of maxInFlight: a call past them is refused TOO_MANY_IN_FLIGHT, not sent to the node", async () => {
    const url = `ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`;
    const leader = await Client.open(url);
    const follower = await Client.open(url);
    try {
      const txs = [1, 2, 3].map((n) => `0x${String(n).repeat(64)}`);
      for (const [i, tx] of txs.entries())
        leader.send(
          JSON.stringify({ jsonrpc: "2.0", id: i, method: "eth_getTransactionReceipt", params: [tx] }),
        );
      await eventually(() => receipts === 3, 3_000, "the leader's three calls at the node");
      for (const [i, tx] of txs.entries())
        follower.send(
          JSON.stringify({ jsonrpc: "2.0", id: 10 + i, method: "eth_getTransactionReceipt", params: [tx] }),
        );
      await eventually(
        async () => (await gw.metric("gateway_cache_waiting", { label: "eth" })) === 3,
        3_000,
        "the follower's three calls waiting on the leader's",
      );
      follower.send(
        JSON.stringify({ jsonrpc: "2.0", id: 20, method: "eth_getBalance", params: [ADDRESS, "latest"] }),
      );
      const refused = await follower.answerTo("20");
      expect(refused.error).toMatchObject({ data: { code: "TOO_MANY_IN_FLIGHT", maxInFlight: 3 } });
      expect(node.methods()).not.toContain("eth_getBalance");

      // once the calls waited on land, the slots are free again
      release();
      for (const id of ["10", "11", "12"]) expect((await follower.answerTo(id)).result).toBeNull();
      expect((await follower.call("eth_getBalance", [ADDRESS, "latest"])).result).toBe("0x1");
      expect(follower.isOpen).toBe(true);
    } finally {
      leader.close();
      follower.close();
    }
  });
});
