import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import {
  type ActiveSubscription,
  type LoopbackWsNode,
  SharedSubstrateChain,
  SUBSTRATE_GENESIS,
  startLoopbackWsNode,
  substrateNode,
} from "../support/loopback-ws-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A wallet follows finality on a WebSocket (polkadot.js `api.rpc.chain.subscribeFinalizedHeads`) and reads
// the finalized head over HTTP (`chain_getFinalizedHead`). Two Polkadot nodes at one best block; GRANDPA's
// round completes on `a` first: it pushes the new finalized header, while `b` still names the one before
// (polkadot-sdk chain_full.rs subscribe_finalized_heads follows the client's finality notifications; the
// prober read both at the older one). The HTTP read must not answer a finalized head below the one the
// socket just showed.
describe("a finalized header pushed on a socket, then chain_getFinalizedHead over HTTP", () => {
  const chain = new SharedSubstrateChain();
  let aFinal = chain.head - 2;
  const aFeeds = new Set<ActiveSubscription>();
  let a: LoopbackWsNode;
  let b: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    // a Polkadot node's genesis hash at block 0, as the prober checks it (as notified-heads.test.ts does)
    const chainBase = substrateNode({ chain });
    const byNumber = chainBase.results?.chain_getBlockHash as (params: unknown) => unknown;
    const base = {
      ...chainBase,
      results: {
        ...chainBase.results,
        chain_getBlockHash: (params: unknown) =>
          Array.isArray(params) && (params[0] === 0 || params[0] === "0x0")
            ? SUBSTRATE_GENESIS
            : byNumber(params),
      },
    };
    const finalizedHash = () => SharedSubstrateChain.hash(aFinal);
    a = await startLoopbackWsNode({
      ...base,
      results: {
        ...base.results,
        chain_getFinalizedHead: finalizedHash,
        chain_getFinalisedHead: finalizedHash,
      },
      subscriptions: {
        ...base.subscriptions,
        chain_subscribeFinalizedHeads: {
          notification: "chain_finalizedHead",
          unsubscribe: "chain_unsubscribeFinalizedHeads",
          onSubscribe: (subscription) => {
            aFeeds.add(subscription);
            subscription.onEnd(() => aFeeds.delete(subscription));
            subscription.notify(SharedSubstrateChain.header(aFinal));
          },
        },
      },
    });
    b = await startLoopbackWsNode({
      ...base,
      subscriptionId: (n) => `Bb${n.toString(36).padStart(14, "0")}`,
    });
    gw = await startGateway({
      upstreams: {
        dot: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw, "dot");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.close(), b?.close()]);
    restore?.();
  });

  it("answers the finalized head the socket showed, or a later one", async () => {
    // a connection on `a`
    const clients: Client[] = [];
    let onA: Client | undefined;
    for (let i = 0; i < 20 && onA === undefined; i++) {
      const before = a.connections.length;
      const client = await Client.open(`ws://dot.${DOMAIN}:${gw.port}/${KEYS.all}`);
      clients.push(client);
      if (a.connections.length > before) onA = client;
    }
    if (onA === undefined) throw new Error("no connection opened on a");
    await onA.call("chain_subscribeFinalizedHeads", []);
    const shown = SharedSubstrateChain.hash(aFinal + 1);
    const from = onA.received.length;
    aFinal++;
    for (const feed of aFeeds) feed.notify(SharedSubstrateChain.header(aFinal));
    await onA.waitFor(
      (t) => t.includes("chain_finalizedHead") && t.includes(`"0x${aFinal.toString(16)}"`),
      3_000,
      from,
    );
    const answers: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await gw.call("dot", `/${KEYS.all}`, { body: rpcBody("chain_getFinalizedHead", []) });
      answers.push((r.json as { result: unknown }).result);
    }
    for (const client of clients) client.close();
    expect(answers).toEqual(Array(10).fill(shown));
  });

  it("answers it on a connection of its own too, one opened on the node less final", async () => {
    // after the case above: `a` pushed a finalized header `b` has not finalized yet
    const shown = SharedSubstrateChain.hash(aFinal);
    const clients: Client[] = [];
    try {
      let onB: Client | undefined;
      for (let i = 0; i < 20 && onB === undefined; i++) {
        const before = b.connections.length;
        const client = await Client.open(`ws://dot.${DOMAIN}:${gw.port}/${KEYS.all}`);
        clients.push(client);
        if (b.connections.length > before) onB = client;
      }
      if (onB === undefined) throw new Error("no connection opened on b");
      const answers: unknown[] = [];
      for (let i = 0; i < 5; i++) answers.push((await onB.call("chain_getFinalizedHead", [])).result);
      expect(answers).toEqual(Array(5).fill(shown));
    } finally {
      for (const client of clients) client.close();
    }
  });
});
