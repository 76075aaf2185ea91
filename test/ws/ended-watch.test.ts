import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import {
  type ActiveSubscription,
  type LoopbackWsNode,
  type LoopbackWsNodeOptions,
  SharedSubstrateChain,
  startLoopbackWsNode,
  substrateNode,
} from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// polkadot-sdk ends an extrinsic's watch itself: author_submitAndWatchExtrinsic's stream ends after a final
// status (finalized, usurped, dropped, invalid, finalityTimeout; client/rpc/src/author/mod.rs), or when the
// pool drops its watcher, and an unwatch after that is answered `false`. transactionWatch_v1_submitAndWatch's
// last event is finalized, invalid, dropped or error, and polkadot-api ends its watch there without an
// unwatch. docs/websocket.md: a watch pins the connection "while it holds it", and maxSubscriptions bounds
// live subscriptions. The gateway kept every such watch: the connection stayed pinned (1014 when its node
// went, rather than a move) and each finished extrinsic held a subscription slot for the socket's life.

/** How the node's extrinsic watches end: at `finalized`, or with no final status (its pool dropped the watcher). */
type WatchEnd = "finalized" | "silently";

/** A Polkadot node whose extrinsic watches end on the node's side, as polkadot-sdk's do. */
function withEndingWatches(options: LoopbackWsNodeOptions, end: WatchEnd): LoopbackWsNodeOptions {
  const block = SharedSubstrateChain.hash(100);
  return {
    ...options,
    subscriptions: {
      ...options.subscriptions,
      author_submitAndWatchExtrinsic: {
        notification: "author_extrinsicUpdate",
        unsubscribe: "author_unwatchExtrinsic",
        onSubscribe: (s: ActiveSubscription) => {
          s.notify("ready");
          s.notify({ inBlock: block });
          if (end === "finalized") s.notify({ finalized: block });
          s.end();
        },
      },
      transactionWatch_v1_submitAndWatch: {
        notification: "transactionWatch_v1_watchEvent",
        unsubscribe: "transactionWatch_v1_unwatch",
        onSubscribe: (s: ActiveSubscription) => {
          s.notify({ event: "validated" });
          s.notify({ event: "bestChainBlockIncluded", block: { hash: block, index: 0 } });
          s.notify({ event: "finalized", block: { hash: block, index: 0 } });
          s.end();
        },
      },
    },
  };
}

/** Two Polkadot nodes of one chain, a primary and b a fallback, behind a gateway: one per describe (a is closed). */
function endingPair(end: WatchEnd, maxSubscriptions?: number) {
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
    pair.a = await startLoopbackWsNode(withEndingWatches(substrateNode({ chain: pair.chain }), end));
    pair.b = await startLoopbackWsNode({
      ...withEndingWatches(substrateNode({ chain: pair.chain }), end),
      subscriptionId: (n) => `Bb${n.toString(36).padStart(14, "0")}`,
    });
    pair.gw = await startGateway({
      upstreams: {
        dot: [
          { url: pair.a.url, name: "a" },
          { url: pair.b.url, name: "b", tier: "fallback" },
        ],
      },
      ...(maxSubscriptions === undefined
        ? {}
        : { limits: { ws: { ...DEFAULT_LIMITS.ws, maxSubscriptions } } }),
    });
  });
  afterAll(async () => {
    await pair.gw?.close();
    await Promise.all([pair.a?.close(), pair.b?.close()]);
    restore();
  });
  return pair;
}

/** Closes node a: the connection's new heads go on from b, on the socket the client opened (no 1014). */
async function movesWhenNodeGoes(
  pair: { chain: SharedSubstrateChain; a: LoopbackWsNode },
  client: Client,
  heads: string,
): Promise<void> {
  const producing = setInterval(() => pair.chain.produce(), 30);
  try {
    await pair.a.close();
    const at = client.received.length;
    await client.waitFor((t) => t.includes("chain_newHead") && t.includes(heads), 5_000, at);
    expect(client.isOpen).toBe(true);
  } finally {
    clearInterval(producing);
  }
}

describe("an extrinsic watch the node ended without a final status, then unwatched", () => {
  const pair = endingPair("silently");

  it("gets the node's false, and no longer pins the connection: losing the node moves it", async () => {
    const client = await Client.open(`ws://dot.${DOMAIN}:${pair.gw.port}/${KEYS.all}`);
    try {
      const heads = (await client.call("chain_subscribeNewHeads", [])).result as string;
      const watch = (await client.call("author_submitAndWatchExtrinsic", ["0x2d0284"])).result as string;
      await client.waitFor((t) => t.includes("author_extrinsicUpdate") && t.includes("inBlock"));
      // the node holds no such watch any more, and says so
      expect((await client.call("author_unwatchExtrinsic", [watch])).result).toBe(false);
      await movesWhenNodeGoes(pair, client, heads);
    } finally {
      client.close();
    }
  }, 20_000);
});

describe("an extrinsic watch that reached finalized, then unwatched as polkadot.js does", () => {
  const pair = endingPair("finalized");

  it("no longer pins the connection: losing the node moves it, not 1014", async () => {
    const client = await Client.open(`ws://dot.${DOMAIN}:${pair.gw.port}/${KEYS.all}`);
    try {
      const heads = (await client.call("chain_subscribeNewHeads", [])).result as string;
      const watch = (await client.call("author_submitAndWatchExtrinsic", ["0x2d0284"])).result as string;
      await client.waitFor((t) => t.includes("author_extrinsicUpdate") && t.includes("finalized"));
      expect((await client.call("author_unwatchExtrinsic", [watch])).result).toBe(false);
      await movesWhenNodeGoes(pair, client, heads);
    } finally {
      client.close();
    }
  }, 20_000);
});

describe("extrinsic watches that reached finalized, never unwatched", () => {
  const pair = endingPair("finalized", 2);

  it("hold no subscription slot: a third after two finished is made at maxSubscriptions 2", async () => {
    const client = await Client.open(`ws://dot.${DOMAIN}:${pair.gw.port}/${KEYS.all}`);
    try {
      for (const extrinsic of ["0x2d0280", "0x2d0281"]) {
        const watch = (await client.call("author_submitAndWatchExtrinsic", [extrinsic])).result as string;
        await client.waitFor(
          (t) => t.includes("author_extrinsicUpdate") && t.includes(watch) && t.includes("finalized"),
        );
      }
      const third = await client.call("author_submitAndWatchExtrinsic", ["0x2d0289"]);
      expect(third.error).toBeUndefined();
      expect(typeof third.result).toBe("string");
    } finally {
      client.close();
    }
  }, 20_000);
});

describe("a transactionWatch_v1 watch that reached finalized, its last event (never unwatched)", () => {
  const pair = endingPair("finalized");

  it("no longer pins the connection: losing the node moves it, not 1014", async () => {
    const client = await Client.open(`ws://dot.${DOMAIN}:${pair.gw.port}/${KEYS.all}`);
    try {
      const heads = (await client.call("chain_subscribeNewHeads", [])).result as string;
      await client.call("transactionWatch_v1_submitAndWatch", ["0x2d0284"]);
      await client.waitFor((t) => t.includes("transactionWatch_v1_watchEvent") && t.includes('"finalized"'));
      await movesWhenNodeGoes(pair, client, heads);
    } finally {
      client.close();
    }
  }, 20_000);
});
