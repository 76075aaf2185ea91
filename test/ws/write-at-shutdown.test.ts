import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import {
  evmNode,
  type LoopbackWsNode,
  SharedSubstrateChain,
  startLoopbackWsNode,
  substrateNode,
} from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A graceful stop closes WebSockets with 1001 at once (docs/operations.md), and their node sockets with
// them. A write the node had and had not answered yet was left without any answer: ethers' WebSocketProvider
// keeps such a call pending for ever, and the wallet cannot tell whether its transaction went. It is
// answered WRITE_NOT_CONFIRMED by its id before the close, as a write a move loses is (docs/websocket.md);
// a read in flight is not (it may be asked again anywhere). The node answers eth_sendRawTransaction only
// when the test lets it, as a node busy with its mempool may take a moment.

describe("a WebSocket write in flight when the gateway stops", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void = () => {};
  let release: () => void = () => {};
  const held = new Promise<string>((resolve) => {
    release = () => resolve(`0x${"ab".repeat(32)}`);
  });

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(evmNode({ eth_sendRawTransaction: () => held }));
    gw = await startGateway({ upstreams: { eth: [{ url: node.url, ws: node.wsUrl }] } });
  });
  afterAll(async () => {
    release();
    restore();
    await node?.close();
  });

  it("is answered WRITE_NOT_CONFIRMED by its id before the connection closes with 1001", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    client.send(
      `{"jsonrpc":"2.0","id":9,"method":"eth_sendRawTransaction","params":["0x${"f8".repeat(60)}"]}`,
    );
    await eventually(
      () => node.connections.some((c) => c.messages.some((m) => m.includes("eth_sendRawTransaction"))),
      3_000,
      "the write at the node",
    );
    const stopped = gw.close();
    const answer = await client.answerTo("9");
    expect(answer.error?.data?.code, JSON.stringify(answer)).toBe("WRITE_NOT_CONFIRMED");
    await stopped;
    client.close();
  });
});

// A connection that cannot move (a watched extrinsic lives on its node: registry `pinned`) is closed with
// 1014 when its node goes: a write it had sent there lost its answer the same way.
describe("a WebSocket write in flight when its pinned connection's node goes", () => {
  let a: LoopbackWsNode;
  let b: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void = () => {};

  beforeAll(async () => {
    restore = resolveTestHosts();
    const chain = new SharedSubstrateChain();
    const watching = substrateNode({ chain });
    const withWatch = {
      ...watching,
      subscriptions: {
        ...watching.subscriptions,
        author_submitAndWatchExtrinsic: {
          notification: "author_extrinsicUpdate",
          unsubscribe: "author_unwatchExtrinsic",
        },
      },
    };
    // polkadot-sdk answers author_submitExtrinsic once its pool has validated it: here, never before the node goes
    a = await startLoopbackWsNode({
      ...withWatch,
      results: { ...withWatch.results, author_submitExtrinsic: () => new Promise(() => {}) },
    });
    b = await startLoopbackWsNode(withWatch);
    gw = await startGateway({
      upstreams: {
        dot: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b", tier: "fallback" },
        ],
      },
    });
  });
  afterAll(async () => {
    restore();
    await gw?.close();
    await Promise.all([a?.close(), b?.close()]);
  });

  it("is answered WRITE_NOT_CONFIRMED by its id before the 1014", async () => {
    const client = await Client.open(`ws://dot.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const watched = await client.call("author_submitAndWatchExtrinsic", ["0x2d0284"]);
    expect(watched.error).toBeUndefined();
    client.send('{"jsonrpc":"2.0","id":"x","method":"author_submitExtrinsic","params":["0x2d0285"]}');
    await eventually(
      () => a.connections.some((c) => c.messages.some((m) => m.includes("author_submitExtrinsic"))),
      3_000,
      "the write at the node",
    );
    await a.close();
    const answer = await client.answerTo('"x"');
    expect(answer.error?.data?.code, JSON.stringify(answer)).toBe("WRITE_NOT_CONFIRMED");
    client.close();
  });
});
