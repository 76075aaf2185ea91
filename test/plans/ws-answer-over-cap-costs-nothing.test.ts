import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { UsageRecorder } from "../../src/keys/usage.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// What a user saw: a WebSocket call answered UPSTREAM_RESPONSE_TOO_LARGE was billed at its full price.
// docs/websocket.md: an answer over limits.upstream.maxResponseBytes "is not passed on: each call it answers
// gets UPSTREAM_RESPONSE_TOO_LARGE by its id, as an HTTP caller's would"; over HTTP that failure costs 0
// (X-Compute-Units: 0). Over a WebSocket the gateway's replacement settled the call as answered: counted as
// served, at its full price, in the key's usage (no error), the quota and gateway_compute_units_total.
describe("an answer over the cap on a WebSocket costs nothing, as over HTTP", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void = () => {};
  const recorded: Parameters<UsageRecorder["record"]>[] = [];
  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(evmNode({ eth_getBalance: `0x${"ab".repeat(4096)}` }));
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, ws: node.wsUrl }] },
      limits: { upstream: { ...DEFAULT_LIMITS.upstream, maxResponseBytes: 4096 } },
      usage: { record: (...args) => recorded.push(args) },
    });
  });
  afterAll(async () => {
    restore();
    await gw?.close();
    await node?.close();
  });
  const spent = () => gw.metric("gateway_compute_units_total", { label: "eth" });
  const address = `0x${"cd".repeat(20)}`;

  it("over a WebSocket: 0 CU and an error in the key's usage", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const before = await spent();
    const count = recorded.length;
    const answer = await client.call("eth_getBalance", [address, "latest"]);
    expect(answer.error?.data?.code).toBe("UPSTREAM_RESPONSE_TOO_LARGE");
    await eventually(() => recorded.length > count, 3_000, "the message counted");
    client.close();
    const [, , calls, errors, units] = recorded.at(-1) ?? [];
    expect({ calls, errors, units, metric: (await spent()) - before }).toEqual({
      calls: 1,
      errors: 1,
      units: 0,
      metric: 0,
    });
  });
});
