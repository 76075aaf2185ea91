import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import {
  type LoopbackWsNode,
  SharedSubstrateChain,
  SUBSTRATE_GENESIS,
  startLoopbackWsNode,
  substrateNode,
} from "../support/loopback-ws-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A dApp on a WebSocket (viem's watchBlockNumber, wagmi) was told block N+1 by its newHeads subscription,
// then read the head on the same socket: with the cache on it was answered N, kept from before the block,
// since the label learned heights from the node's answers, never from the headers it pushed. A Substrate
// wallet's chain_subscribeNewHeads then chain_getHeader did the same. A header pushed to a heads
// subscription (registry `heads`) is told to the label before the client has it (ws/connection.ts).
const GENESIS = 1_700_000_000;

for (const cached of [true, false]) {
  describe(`newHeads then a head read on the same socket (cache ${cached ? "on" : "off"})`, () => {
    let a: Anvil;
    let gw: RunningGateway;
    let restore: () => void = () => {};
    const mine = (at: number) => a.rpc("evm_mine", [GENESIS + 12 * at]);

    beforeAll(async () => {
      restore = resolveTestHosts();
      a = await startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 });
      for (let h = 1; h <= 6; h++) await mine(h);
      gw = await startGateway({
        upstreams: { eth: [{ url: a.url, ws: a.url.replace("http:", "ws:"), name: "a" }] },
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
        cache: { ...DEFAULT_CACHE, enabled: cached },
      });
      await everyNodeInRotation(gw);
    });
    afterAll(async () => {
      restore();
      await gw?.close();
      await a?.stop();
    });

    it("never answers a head below the block the subscription just announced", async () => {
      const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
      const sub = await socket.call("eth_subscribe", ["newHeads"]);
      expect(typeof sub.result).toBe("string");
      // the head read once (kept by the cache at block 6)
      const first = await socket.call("eth_blockNumber", []);
      expect(Number(first.result)).toBe(6);
      await mine(7);
      await socket.waitFor((t) => t.includes('"eth_subscription"') && t.includes('"number":"0x7"'));
      const after = await socket.call("eth_blockNumber", []);
      const latest = (await socket.call("eth_getBlockByNumber", ["latest", false])).result as {
        number: string;
      };
      socket.close();
      expect([Number(after.result), Number(latest.number)]).toEqual([7, 7]);
    });
  });
}

for (const cached of [true, false]) {
  describe(`chain_newHead then chain_getHeader on the same socket (cache ${cached ? "on" : "off"})`, () => {
    const chain = new SharedSubstrateChain();
    let node: LoopbackWsNode;
    let gw: RunningGateway;
    let restore: () => void = () => {};

    beforeAll(async () => {
      restore = resolveTestHosts();
      // a Polkadot node's genesis hash at block 0, as the prober checks it (chain mode names it by number)
      const base = substrateNode({ chain });
      const byNumber = base.results?.chain_getBlockHash as (params: unknown) => unknown;
      node = await startLoopbackWsNode({
        ...base,
        results: {
          ...base.results,
          chain_getBlockHash: (params: unknown) =>
            Array.isArray(params) && (params[0] === 0 || params[0] === "0x0")
              ? SUBSTRATE_GENESIS
              : byNumber(params),
        },
      });
      gw = await startGateway({
        upstreams: { dot: [node.url] },
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
        cache: { ...DEFAULT_CACHE, enabled: cached },
      });
      const dot = () => gw.gateway.upstreams.groups().find((g) => g.label === "dot");
      await eventually(() => dot()?.served.height === chain.head, 10_000, "the served head read");
    });
    afterAll(async () => {
      restore();
      await gw?.close();
      await node?.close();
    });

    it("never answers a best header below the one the subscription just announced", async () => {
      const socket = await Client.open(`ws://dot.${DOMAIN}:${gw.port}/${KEYS.all}`);
      const first = (await socket.call("chain_getHeader", [])).result as { number: string };
      expect(Number(first.number)).toBe(chain.head);
      const sub = await socket.call("chain_subscribeNewHeads", []);
      expect(typeof sub.result).toBe("string");
      chain.produce();
      const next = `"number":"0x${chain.head.toString(16)}"`;
      await socket.waitFor((t) => t.includes('"chain_newHead"') && t.includes(next));
      const after = (await socket.call("chain_getHeader", [])).result as { number: string };
      socket.close();
      expect(Number(after.number)).toBe(chain.head);
    });
  });
}
