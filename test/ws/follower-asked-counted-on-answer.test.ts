import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE } from "../../src/config/defaults.js";
import type { UsageRecorder } from "../../src/keys/usage.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// docs/plans.md, "Quotas": over a WebSocket "a call is counted when it is answered, as over HTTP: ... a call
// no node answered (the gateway closed the connection with 1014 under it, or the caller left) costs
// nothing". A call that waited on an identical call in flight, whose caller left before its answer (so it
// landed with nothing to share), is asked of the node itself: it was counted, at its full price, the
// moment it was sent, and its own caller, who left before the node answered it, was billed for it.

const TX = `0x${"5a".repeat(32)}`;
const MINED = `0x${"6b".repeat(32)}`;
const RECEIPT = {
  transactionHash: MINED,
  blockNumber: "0x10",
  blockHash: `0x${"11".repeat(32)}`,
  status: "0x1",
};

describe("a follower asked of its node after the call it waited on had nothing to share", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  let receipts = 0;
  const usage: { units: number; calls: number; errors: number }[] = [];
  const recorder: UsageRecorder = {
    record: (_key, _label, calls, errors, units) => usage.push({ calls, errors, units }),
  };

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(
      evmNode({
        // a node slow to answer: neither caller waits it out
        eth_getTransactionReceipt: (params: unknown) => {
          receipts++;
          // the answered case's second ask is answered: its transaction was mined meanwhile
          if ((params as string[])[0] === MINED && receipts === 4) return RECEIPT;
          return new Promise(() => {});
        },
      }),
    );
    gw = await startGateway({
      upstreams: { eth: [node.url] },
      cache: { ...DEFAULT_CACHE, enabled: true },
      usage: recorder,
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("costs nothing when its caller leaves before the node answered it", async () => {
    const units = () => gw.metric("gateway_compute_units_total", { label: "eth" });
    const before = await units();
    const leader = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const follower = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    leader.ws.send(
      JSON.stringify({ jsonrpc: "2.0", id: 6, method: "eth_getTransactionReceipt", params: [TX] }),
    );
    await eventually(() => receipts === 1, 3_000, "the leader's call at the node");
    follower.ws.send(
      JSON.stringify({ jsonrpc: "2.0", id: 7, method: "eth_getTransactionReceipt", params: [TX] }),
    );
    await eventually(
      async () => (await gw.metric("gateway_cache_waiting", { label: "eth" })) === 1,
      3_000,
      "the follower waiting on the leader's call",
    );
    // the leader leaves: its call lands with nothing to share, and the follower asks the node itself
    leader.ws.close();
    await eventually(() => receipts === 2, 3_000, "the follower's own call at the node");
    follower.ws.close();
    await eventually(() => node.openConnections() === 0, 3_000, "both node sockets closed");
    await eventually(() => usage.length === 2, 3_000, "both messages counted");
    // neither call was answered: neither costs anything
    expect(usage.map((row) => row.units)).toEqual([0, 0]);
    expect(await units()).toBe(before);
  });

  it("is counted once, at its price, when the node answers it", async () => {
    usage.length = 0;
    const units = () => gw.metric("gateway_compute_units_total", { label: "eth" });
    const before = await units();
    const leader = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const follower = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    leader.ws.send(
      JSON.stringify({ jsonrpc: "2.0", id: 8, method: "eth_getTransactionReceipt", params: [MINED] }),
    );
    await eventually(() => receipts === 3, 3_000, "the leader's call at the node");
    const followed = follower.call("eth_getTransactionReceipt", [MINED]);
    await eventually(
      async () => (await gw.metric("gateway_cache_waiting", { label: "eth" })) === 1,
      3_000,
      "the follower waiting on the leader's call",
    );
    leader.ws.close();
    expect(await followed).toMatchObject({ result: RECEIPT });
    await eventually(() => usage.length === 2, 3_000, "both messages counted");
    expect(usage.map((row) => row.units).sort((a, b) => a - b)).toEqual([0, 20]);
    expect(await units()).toBe(before + 20);
    follower.ws.close();
  });
});
