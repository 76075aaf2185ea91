import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// One upstream socket per client connection, so the node's own subscription semantics hold
// (docs/websocket.md): on the node a connection opened on, a reorganisation's heads and logs reach the
// client as the node pushes them, however many subscriptions the connection holds (viem's watchEvent and
// watchBlockNumber on one client are two). Only a move's repeats are dropped.

const ADDRESS = "0x00000000000000000000000000000000000e0175";
const hash = (fill: string) => `0x${fill.repeat(64)}`;
const head = (n: number, fill: string) => ({
  number: `0x${n.toString(16)}`,
  hash: hash(fill),
  parentHash: hash("0"),
});
const log = (n: number, index: number, fill: string, removed: boolean) => ({
  address: ADDRESS,
  topics: [],
  data: "0x",
  blockNumber: `0x${n.toString(16)}`,
  blockHash: hash(fill),
  transactionHash: hash(fill),
  transactionIndex: "0x0",
  logIndex: `0x${index.toString(16)}`,
  removed,
});

describe("a connection's subscriptions on its own node, through a reorganisation", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(evmNode());
    gw = await startGateway({ upstreams: { eth: [node.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("sends every head and log the node pushes, a sibling head, a lower head and a log mined again included", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const logsId = (await client.call("eth_subscribe", ["logs", { address: ADDRESS }])).result;
    const headsId = (await client.call("eth_subscribe", ["newHeads"])).result;
    const onNode = [...node.latest().subscriptions.values()];
    const logs = onNode.find((s) => JSON.stringify(s.params).includes("logs"));
    const heads = onNode.find((s) => JSON.stringify(s.params).includes("newHeads"));
    const pushedHeads = [head(100, "a"), head(100, "b"), head(99, "c"), head(101, "d")];
    const pushedLogs = [
      log(100, 0, "a", false),
      log(100, 1, "a", false),
      log(100, 1, "a", true),
      log(100, 0, "a", true),
      // the same event, mined again in the block that replaced block 100
      log(100, 0, "b", false),
      log(101, 0, "d", false),
    ];
    for (const result of pushedHeads) heads?.notify(result);
    for (const result of pushedLogs) logs?.notify(result);
    const notifications = () => client.received.filter((text) => text.includes("eth_subscription"));
    await client.waitFor(() => notifications().length === pushedHeads.length + pushedLogs.length);
    const results = (id: unknown) =>
      notifications()
        .map((text) => JSON.parse(text).params)
        .filter((params) => params.subscription === id)
        .map((params) => params.result);
    expect(results(headsId)).toEqual(pushedHeads);
    expect(results(logsId)).toEqual(pushedLogs);
    client.close();
  });
});
