import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Anvil } from "../support/anvil.js";
import { EMITTER, GENESIS, mineEmitterCall, startSameChainPair } from "../support/emitter-chain.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";
import { pushedTo, type RelayCall, startWsRelay } from "../support/ws-relay.js";

// A connection moved to another node fills what its client missed there (docs/websocket.md): the heads
// between the last one sent and the new node's first, walked back by their parents; the logs of the blocks
// since the last one sent, with eth_getLogs. When the new node's socket was lost in the middle of that fill
// (a node restarted in a rolling upgrade, a balancer's connection cut), what the fill had found so far and
// what the new node had pushed meanwhile went to the client: heads 4 and 5 after 1, logs of block 5 after
// block 1's; the next move then filled only from there, and heads 2 and 3 (or their logs) were never sent.
// Two real anvils on one chain; `b`'s WebSocket reaches the gateway through a relay of this test's own,
// which cuts the gateway's socket once, at a chosen call of the fill.

/** A WebSocket relay to `target` that cuts its connection once, when `cutAt` says so of a gateway message. */
async function startRelay(target: string) {
  const state = {
    cutAt: undefined as ((call: RelayCall) => boolean) | undefined,
    /** Held instead of forwarded, then the connection cut: set by `cutAt` returning true. */
    heldCall: undefined as RelayCall | undefined,
    cuts: 0,
    /** Notifications the node pushed, written to the gateway's socket. */
    pushed: 0,
    cut: () => {},
  };
  const relay = await startWsRelay(target, {
    fromGateway: (call, _text, link) => {
      if (state.cuts !== 0 || state.cutAt?.(call) !== true) return false;
      state.heldCall = call;
      state.cut = () => {
        state.cuts++;
        link.cut();
      };
      return true;
    },
    written: (text) => {
      if (text.includes('"eth_subscription"')) state.pushed++;
    },
  });
  return { ...relay, state };
}

describe("a connection whose new node's socket is lost while the move fills the client's gap", () => {
  let a: Anvil;
  let b: Anvil;
  let relay: Awaited<ReturnType<typeof startRelay>>;
  let gw: RunningGateway;
  let restore: () => void;
  let time = GENESIS;
  let nonce = 0;

  async function mine(nodes: readonly Anvil[]): Promise<void> {
    time += 12;
    await mineEmitterCall(nodes, { time, nonce: nonce++ });
  }

  beforeAll(async () => {
    restore = resolveTestHosts();
  });
  beforeEach(async () => {
    await gw?.close();
    await Promise.all([a?.stop(), b?.stop(), relay?.close()]);
    time = GENESIS;
    nonce = 0;
    [a, b] = await startSameChainPair();
    relay = await startRelay(`ws://127.0.0.1:${b.port}`);
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, name: "a" },
          { url: b.url, ws: relay.url, name: "b", tier: "fallback" },
        ],
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.stop(), b?.stop(), relay?.close()]);
    restore?.();
  });

  it("sends every head once, in order, after moving again", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      const id = (await client.call("eth_subscribe", ["newHeads"])).result;
      const heads = () => pushedTo(client, id).map((head) => Number(head.number));
      await mine([a, b]);
      await eventually(() => heads().length === 1, 5_000, "block 1");
      // b goes on alone to block 4; the walk back from its next head asks 4, then 3: cut at 3's
      for (let i = 0; i < 3; i++) await mine([b]);
      let walked = 0;
      relay.state.cutAt = (call) =>
        call.method === "eth_getBlockByHash" && String(call.id).startsWith("gateway-") && ++walked === 2;
      await a.kill("SIGKILL");
      await eventually(
        async () =>
          (await gw.metric("gateway_websocket_moves_total", { label: "eth", outcome: "moved" })) === 1,
        5_000,
        "the connection on b",
      );
      await mine([b]);
      await eventually(() => relay.state.heldCall !== undefined, 5_000, "the fill under way");
      relay.state.cut();
      await eventually(
        async () =>
          (await gw.metric("gateway_websocket_moves_total", { label: "eth", outcome: "moved" })) === 2,
        5_000,
        "the connection on b again",
      );
      await mine([b]);
      await eventually(() => heads().includes(6), 5_000, "block 6");
      expect(heads()).toEqual([1, 2, 3, 4, 5, 6]);
    } finally {
      client.close();
    }
  });

  it("sends every log once, in order, after moving again", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      const id = (await client.call("eth_subscribe", ["logs", { address: EMITTER }])).result;
      const logBlocks = () => pushedTo(client, id).map((log) => Number(log.blockNumber));
      await mine([a, b]);
      await eventually(() => logBlocks().length === 1, 5_000, "block 1's log");
      for (let i = 0; i < 3; i++) await mine([b]);
      // the fill's query is held at the relay while b mines block 5, whose log b pushes, then cut
      relay.state.cutAt = (call) => call.method === "eth_getLogs" && String(call.id).startsWith("gateway-");
      await a.kill("SIGKILL");
      await eventually(() => relay.state.heldCall !== undefined, 5_000, "the fill under way");
      const pushed = relay.state.pushed;
      await mine([b]);
      // b's log of block 5 reaches the gateway, held there behind the fill, before the cut
      await eventually(() => relay.state.pushed > pushed, 5_000, "block 5's log pushed");
      expect(logBlocks()).toEqual([1]);
      relay.state.cut();
      await eventually(
        async () =>
          (await gw.metric("gateway_websocket_moves_total", { label: "eth", outcome: "moved" })) === 2,
        5_000,
        "the connection on b again",
      );
      await mine([b]);
      await eventually(() => logBlocks().includes(6), 5_000, "block 6's log");
      expect(logBlocks()).toEqual([1, 2, 3, 4, 5, 6]);
    } finally {
      client.close();
    }
  });
});
