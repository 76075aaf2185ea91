import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GatewayConfig } from "../../src/config/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

/** How long a node takes to answer: a call out at it, not a wait of the test's. */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// An operator reloads (SIGHUP) under traffic: a call in flight across the reload was sent to a node and
// answered by it. gateway_upstream_attempts_total counts "attempts sent to each node"; the reload carries
// the counts to the new config (served-config.ts carryUpstreamState: "nor sends a counter back"). The
// attempt that ends after the reload must still be counted, and while it is out it is "in flight".
describe("a call in flight across a reload", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  const answer = jsonRpcResponder({ eth_blockNumber: "0x10" });
  beforeAll(async () => {
    node = await startLoopbackNode(async (seen) => {
      await sleep(600);
      return answer(seen);
    });
    gw = await startGateway({ upstreams: { eth: [{ url: node.url, name: "n1" }] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("is counted as answered by its node, and in flight while it is out", async () => {
    const before = await gw.metric("gateway_upstream_attempts_total", {
      upstream: "n1",
      outcome: "answered",
    });
    const sent = node.requests.length;
    const pending = gw.call("eth", `/${KEYS.all}/`, { body: rpcBody("eth_blockNumber", [], 1) });
    // out at its node, which answers 600 ms later
    await eventually(() => node.requests.length > sent, 5_000, "the call at its node");
    const inFlightBefore = await gw.metric("gateway_upstream_in_flight", { upstream: "n1" });
    gw.gateway.reload({ ...gw.config } as GatewayConfig, gw.keys);
    const inFlightAfter = await gw.metric("gateway_upstream_in_flight", { upstream: "n1" });
    const r = await pending;
    expect(r.status).toBe(200);
    const answeredSince = async () =>
      (await gw.metric("gateway_upstream_attempts_total", { upstream: "n1", outcome: "answered" })) - before;
    // counted as its attempt ends, which may follow the answer's last byte
    await eventually(async () => (await answeredSince()) > 0, 5_000, "the attempt counted");
    const answered = await answeredSince();
    expect(inFlightBefore).toBe(1);
    expect(answered).toBe(1);
    // and once it is back, it is out nowhere: the retired config's count is not shown twice
    expect(await gw.metric("gateway_upstream_in_flight", { upstream: "n1" })).toBe(0);
    expect(inFlightAfter).toBe(1);
  });
});

// gateway_upstream_held: "calls it holds until something happens: streams and long polls; each takes a
// connection of the node's pool for them". A long poll (algod wait-for-block-after) held across a reload
// still holds its connection to the node: the gauge must still show it.
describe("a long poll held across a reload", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    node = await startLoopbackNode(async (seen) => {
      if (seen.url.includes("wait-for-block-after")) await sleep(800);
      return { body: { "last-round": 11 } };
    });
    gw = await startGateway({ upstreams: { algo: [{ url: node.url, name: "a1" }] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("is still held by its node after the reload", async () => {
    const pending = gw.call("algo", `/${KEYS.all}/v2/status/wait-for-block-after/10`);
    // held at its node, which answers 800 ms later
    await eventually(
      () => node.requests.some((r) => r.url.includes("wait-for-block-after")),
      5_000,
      "the long poll at its node",
    );
    const heldBefore = await gw.metric("gateway_upstream_held", { upstream: "a1" });
    gw.gateway.reload({ ...gw.config } as GatewayConfig, gw.keys);
    const heldAfter = await gw.metric("gateway_upstream_held", { upstream: "a1" });
    const r = await pending;
    expect(r.status).toBe(200);
    expect(heldBefore).toBe(1);
    expect(heldAfter).toBe(1);
  });
});
