import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Anvil } from "../support/anvil.js";
import {
  EMITTER,
  GENESIS,
  mineEmitterCall,
  signedEmitterCall,
  startSameChainPair,
} from "../support/emitter-chain.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";
import { pushedTo, type RelayCall, startWsRelay } from "../support/ws-relay.js";

// A connection moved to another node fills what its client missed (docs/websocket.md): the heads between
// the last one sent and the new node's first, walked back by their parents; the logs since the last one
// sent, with eth_getLogs. A fill call the node answered with an error, not a lost socket, ended the fill
// as if it were done: the heads walked so far went out, the rest of the gap was skipped, and the new node's
// head followed; the logs of the gap were taken as none. The client never learned of what it missed. Now
// the connection is closed with 1014, as when the new node refuses a subscription, and nothing past the
// gap is sent. Two real anvils on one chain; `b`'s WebSocket reaches the gateway through a relay of this
// test's own that answers as the software in front of a node, or the node, does:
// - proxyd's rate limit: -32016 "over rate limit" (ethereum-optimism/infra proxyd/errors.go ErrOverRateLimit);
// - Reth run with `--rpc.max-logs-per-response 1`: -32602 "query exceeds max results 1, retry with the
//   range A-B" (paradigmxyz/reth crates/rpc/rpc/src/eth/filter.rs EthFilterError::QueryExceedsMaxResults).

/**
 * A WebSocket relay to `target`: `refuse` answers a call with an error in the node's stead; `rewrite`
 * replaces the node's answer to a call.
 */
async function startRelay(target: string) {
  const state = {
    refuse: undefined as ((call: RelayCall) => object | undefined) | undefined,
    rewrite: undefined as ((call: RelayCall, answer: { result?: unknown }) => object | undefined) | undefined,
  };
  const relay = await startWsRelay(target, {
    fromGateway: (call, _text, link) => {
      const error = state.refuse?.(call);
      if (error !== undefined) link.reply(JSON.stringify({ jsonrpc: "2.0", id: call.id, error }));
      return error !== undefined;
    },
    fromNode: (text, call) => {
      const answer = JSON.parse(text) as { id?: unknown; result?: unknown };
      const error = call === undefined ? undefined : state.rewrite?.(call, answer);
      return error === undefined ? undefined : JSON.stringify({ jsonrpc: "2.0", id: answer.id, error });
    },
  });
  return { ...relay, state };
}

const isGateway = (call: RelayCall) => String(call.id).startsWith("gateway-");

describe("a connection whose new node answers a fill's call with an error", () => {
  let a: Anvil;
  let b: Anvil;
  let relay: Awaited<ReturnType<typeof startRelay>>;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
  });
  beforeEach(async () => {
    await gw?.close();
    await Promise.all([a?.stop(), b?.stop(), relay?.close()]);
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

  it("sends no head past a gap its walk could not fill, and closes with 1014", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    let closedWith: number | undefined;
    void client.closed.then((closed) => {
      closedWith = closed.code;
    });
    try {
      const id = (await client.call("eth_subscribe", ["newHeads"])).result;
      const heads = () => pushedTo(client, id).map((head) => Number(head.number));
      await mineEmitterCall([a, b], { time: GENESIS + 12, nonce: 0 });
      await eventually(() => heads().length === 1, 5_000, "block 1");
      // b goes on alone to block 4; the walk back from its block 5 asks 4, then 3: 3's is refused
      for (let i = 1; i <= 3; i++) await mineEmitterCall([b], { time: GENESIS + 12 * (i + 1), nonce: i });
      let walked = 0;
      relay.state.refuse = (call) =>
        isGateway(call) && call.method === "eth_getBlockByHash" && ++walked === 2
          ? { code: -32016, message: "over rate limit" }
          : undefined;
      await a.kill("SIGKILL");
      await eventually(
        async () =>
          (await gw.metric("gateway_websocket_moves_total", { label: "eth", outcome: "moved" })) === 1,
        5_000,
        "the connection on b",
      );
      await mineEmitterCall([b], { time: GENESIS + 60, nonce: 4 });
      await eventually(() => closedWith !== undefined || heads().length > 1, 5_000, "a close or a head");
      expect(heads()).toEqual([1]);
      expect(closedWith).toBe(1014);
    } finally {
      client.close();
    }
  });

  it("sends no log past a gap its query could not fill, and closes with 1014", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    let closedWith: number | undefined;
    void client.closed.then((closed) => {
      closedWith = closed.code;
    });
    try {
      const id = (await client.call("eth_subscribe", ["logs", { address: EMITTER }])).result;
      const logBlocks = () => pushedTo(client, id).map((log) => Number(log.blockNumber));
      await mineEmitterCall([a, b], { time: GENESIS + 12, nonce: 0 });
      await eventually(() => logBlocks().length === 1, 5_000, "block 1's log");
      // b alone: two logs in block 2, more than its one log a query
      await b.rpc("eth_sendRawTransaction", [await signedEmitterCall(1)]);
      await b.rpc("eth_sendRawTransaction", [await signedEmitterCall(2)]);
      await b.rpc("evm_mine", [GENESIS + 24]);
      relay.state.rewrite = (call, answer) => {
        if (call.method !== "eth_getLogs" || !Array.isArray(answer.result) || answer.result.length <= 1)
          return undefined;
        const filter = call.params?.[0] as { fromBlock: string };
        const second = Number((answer.result[1] as { blockNumber: string }).blockNumber);
        return {
          code: -32602,
          message: `query exceeds max results 1, retry with the range ${Number(filter.fromBlock)}-${second - 1}`,
        };
      };
      await a.kill("SIGKILL");
      await eventually(
        async () =>
          (await gw.metric("gateway_websocket_moves_total", { label: "eth", outcome: "moved" })) >= 1,
        5_000,
        "the connection on b",
      );
      await mineEmitterCall([b], { time: GENESIS + 36, nonce: 3 });
      await eventually(() => closedWith !== undefined || logBlocks().length > 1, 5_000, "a close or a log");
      expect(logBlocks()).toEqual([1]);
      expect(closedWith).toBe(1014);
    } finally {
      client.close();
    }
  });

  it("sends no log past a gap whose end the node would not say (its head call refused), and closes with 1014", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    let closedWith: number | undefined;
    void client.closed.then((closed) => {
      closedWith = closed.code;
    });
    try {
      const id = (await client.call("eth_subscribe", ["logs", { address: EMITTER }])).result;
      const logBlocks = () => pushedTo(client, id).map((log) => Number(log.blockNumber));
      await mineEmitterCall([a, b], { time: GENESIS + 12, nonce: 0 });
      await eventually(() => logBlocks().length === 1, 5_000, "block 1's log");
      // b alone: block 2's log, which the client misses while it moves
      await mineEmitterCall([b], { time: GENESIS + 24, nonce: 1 });
      // the fill's range ends at the new node's head, which proxyd's rate limit will not let it read
      relay.state.refuse = (call) =>
        isGateway(call) && call.method === "eth_blockNumber"
          ? { code: -32016, message: "over rate limit" }
          : undefined;
      await a.kill("SIGKILL");
      await eventually(
        async () =>
          (await gw.metric("gateway_websocket_moves_total", { label: "eth", outcome: "moved" })) >= 1,
        5_000,
        "the connection on b",
      );
      await mineEmitterCall([b], { time: GENESIS + 36, nonce: 2 });
      await eventually(() => closedWith !== undefined || logBlocks().length > 1, 5_000, "a close or a log");
      expect(logBlocks()).toEqual([1]);
      expect(closedWith).toBe(1014);
    } finally {
      client.close();
    }
  });
});
