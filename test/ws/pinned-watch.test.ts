import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import {
  type LoopbackWsNode,
  type LoopbackWsNodeOptions,
  SharedSubstrateChain,
  startLoopbackWsNode,
  substrateNode,
} from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// docs/websocket.md: a connection is pinned (closed with 1014 when its node goes) while it holds a
// subscription the registry lists as pinned (author_submitAndWatchExtrinsic), and its close's reason says
// so. Once the client has unwatched its extrinsic (polkadot.js' common `if (status.isInBlock) unsub()`), it
// holds none: its other subscriptions (new heads) move with it like any connection's. The gateway marked
// the connection for good the moment the watch was sent, so a node lost hours later closed it with 1014.

/** A Polkadot node that also watches extrinsics, as polkadot-sdk's author RPC does (ready, then inBlock). */
function withAuthorWatch(options: LoopbackWsNodeOptions): LoopbackWsNodeOptions {
  return {
    ...options,
    subscriptions: {
      ...options.subscriptions,
      author_submitAndWatchExtrinsic: {
        notification: "author_extrinsicUpdate",
        unsubscribe: "author_unwatchExtrinsic",
        onSubscribe: (s) => {
          s.notify("ready");
          s.notify({ inBlock: SharedSubstrateChain.hash(100) });
        },
      },
    },
  };
}

/** Two Polkadot nodes of one chain, a primary and b a fallback, behind a gateway: one per describe (a is closed). */
function watchingPair() {
  const pair = {} as {
    chain: SharedSubstrateChain;
    a: LoopbackWsNode;
    b: LoopbackWsNode;
    gw: RunningGateway;
  };
  let restore: () => void = () => {};
  beforeAll(async () => {
    restore = resolveTestHosts();
    pair.chain = new SharedSubstrateChain();
    pair.a = await startLoopbackWsNode(withAuthorWatch(substrateNode({ chain: pair.chain })));
    pair.b = await startLoopbackWsNode({
      ...withAuthorWatch(substrateNode({ chain: pair.chain })),
      subscriptionId: (n) => `Bb${n.toString(36).padStart(14, "0")}`,
    });
    pair.gw = await startGateway({
      upstreams: {
        dot: [
          { url: pair.a.url, name: "a" },
          { url: pair.b.url, name: "b", tier: "fallback" },
        ],
      },
    });
  });
  afterAll(async () => {
    await pair.gw?.close();
    await Promise.all([pair.a?.close(), pair.b?.close()]);
    restore();
  });
  return pair;
}

describe("a Substrate connection that watched an extrinsic and unwatched it", () => {
  const pair = watchingPair();

  it("moves with its new-heads subscription when its node goes, rather than closing with 1014", async () => {
    const { a, chain, gw } = pair;
    const client = await Client.open(`ws://dot.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const heads = (await client.call("chain_subscribeNewHeads", [])).result as string;
    const watched = await client.call("author_submitAndWatchExtrinsic", ["0x2d0284"]);
    const watch = watched.result as string;
    await client.waitFor((t) => t.includes("author_extrinsicUpdate") && t.includes("inBlock"));
    expect((await client.call("author_unwatchExtrinsic", [watch])).result).toBe(true);
    const producing = setInterval(() => chain.produce(), 30);
    try {
      await a.close();
      const at = client.received.length;
      // new heads go on, under the id the client holds, on the socket it opened
      await client.waitFor((t) => t.includes("chain_newHead") && t.includes(heads), 5_000, at);
      expect(client.isOpen).toBe(true);
    } finally {
      clearInterval(producing);
      client.close();
    }
  }, 20_000);
});

describe("a Substrate connection still watching an extrinsic when its node goes", () => {
  const pair = watchingPair();

  it("is closed with 1014 and a reason that says it was pinned (held node state)", async () => {
    const { a, gw } = pair;
    const client = await Client.open(`ws://dot.${DOMAIN}:${gw.port}/${KEYS.all}`);
    await client.call("author_submitAndWatchExtrinsic", ["0x2d0284"]);
    await client.waitFor((t) => t.includes("author_extrinsicUpdate") && t.includes("inBlock"));
    await a.close();
    const closed = await client.closed;
    expect(closed.code).toBe(1014);
    expect(closed.reason).toMatch(/; the connection holds state only that node has$/);
  }, 20_000);
});
