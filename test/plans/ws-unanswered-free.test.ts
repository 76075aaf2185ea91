import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PLANS, PLAN_FIELDS } from "../../src/config/defaults.js";
import type { PlanSpec } from "../../src/config/types.js";
import { DOMAIN, type RunningGateway, rpcBody, startGateway, TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode, type WsCall } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// docs/plans.md "Quotas": "a call the nodes failed cost nothing"; docs/websocket.md: calls in flight "follow
// the HTTP rules". A WebSocket read whose node drops the socket every time it is asked, so that the gateway
// closes the client's connection with 1014 and the read is never answered, was charged its full price to the
// key's quota (and usage): the customer paid for calls that got no answer.

const plan = (fields: Partial<PlanSpec>): PlanSpec => ({
  ...PLAN_FIELDS,
  computeUnitRate: { perSecond: 1_000_000, burst: 1_000_000 },
  ...fields,
});
const RATE = { perSecond: 10_000, burst: 10_000 };
const KEY = "FNwsLost00000000000000000000000";

describe("a WebSocket read that is never answered (the node dropped the socket)", () => {
  let http: LoopbackNode;
  let ws: LoopbackWsNode;
  let gw: RunningGateway;
  let restore = () => {};
  beforeAll(async () => {
    http = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    ws = await startLoopbackWsNode({
      results: {
        eth_blockNumber: "0x10",
        // the node's process dies on this call: the socket is dropped without an answer
        eth_getBalance: (_params: unknown, call: WsCall) => {
          call.connection.socket.terminate();
          return new Promise(() => {});
        },
      },
    });
    restore = resolveTestHosts();
    gw = await startGateway({
      upstreams: { eth: [{ url: http.url, ws: ws.wsUrl }] },
      // eth_getBalance and eth_blockNumber: 20 and 10 compute units (registry/networks.yaml)
      plans: { ...DEFAULT_PLANS, metered: plan({ dailyQuota: 60 }) },
      keys: [...TEST_KEYS, { key: KEY, networks: "*", plan: "metered", rate: RATE }],
    });
  });
  afterAll(async () => {
    restore();
    await gw?.close();
    await Promise.all([http?.close(), ws?.close()]);
  });

  it("costs nothing: the quota is left whole for calls that are answered", async () => {
    const closes: number[] = [];
    for (let i = 0; i < 3; i++) {
      const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEY}`);
      await expect(
        socket.call("eth_getBalance", ["0x00000000000000000000000000000000000000aa", "latest"]),
      ).rejects.toThrow(/socket closed \(1014/);
      closes.push((await socket.closed).code);
    }
    expect(closes).toEqual([1014, 1014, 1014]);
    // nothing was answered: the day's 60 compute units are all left, six eth_blockNumber calls of 10
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++)
      statuses.push((await gw.call("eth", `/${KEY}`, { body: rpcBody("eth_blockNumber") })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
  }, 30_000);
});
