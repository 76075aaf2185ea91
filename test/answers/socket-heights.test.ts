import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A WebSocket connection's node a block past the head the label served (the prober has not read it since it
// made the block) answers the connection's eth_blockNumber with that block. A dApp on both transports
// (wagmi and viem keep a socket for subscriptions beside HTTP) then read the head over HTTP: the label had
// not learned the block, so its HTTP reads went to the other node, a block behind, and with the cache on
// the socket's answer was kept for every HTTP caller beside an older `latest` block. The label learns the
// heights a socket's answers show, as it learns an HTTP answer's (answers/examined.ts learnSocketHeights).
const GENESIS = 1_700_000_000;

for (const cached of [true, false]) {
  describe(`a head read over a WebSocket on the node a block ahead, then HTTP reads (cache ${cached ? "on" : "off"})`, () => {
    let a: Anvil;
    let b: Anvil;
    let gw: RunningGateway;
    let restore: () => void = () => {};
    let height = 0;
    const mine = (node: Anvil, at: number) => node.rpc("evm_mine", [GENESIS + 12 * at]);
    const rpc = async (method: string, params: unknown[]) => {
      const answer = await gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      return (answer.json as { result?: unknown }).result;
    };

    beforeAll(async () => {
      restore = resolveTestHosts();
      [a, b] = await Promise.all([
        startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 }),
        startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 }),
      ]);
      for (height = 1; height <= 6; height++) await Promise.all([mine(a, height), mine(b, height)]);
      gw = await startGateway({
        // the connection must be on the node that will be ahead: b takes WebSockets too (anvil serves them
        // on its HTTP port, which the gateway uses for a node with no WebSocket URL of its own), so b is
        // cordoned while the socket opens (its first choice was either node: half the runs on a loaded host)
        upstreams: {
          eth: [
            { url: a.url, ws: a.url.replace("http:", "ws:"), name: "a" },
            { url: b.url, name: "b" },
          ],
        },
        // the first probes only: the block a makes next is learned from an answer or not at all
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
        cache: { ...DEFAULT_CACHE, enabled: cached },
      });
      await everyNodeInRotation(gw);
    });
    afterAll(async () => {
      restore();
      await gw?.close();
      await Promise.all([a?.stop(), b?.stop()]);
    });

    it("never shows the caller the head going back over HTTP", async () => {
      await mine(a, 7);
      gw.gateway.cordon({ label: "eth", upstream: "b", cordoned: true });
      const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
      gw.gateway.cordon({ label: "eth", upstream: "b", cordoned: false });
      socket.ws.send(JSON.stringify({ jsonrpc: "2.0", id: "ws", method: "eth_blockNumber", params: [] }));
      const overSocket = JSON.parse(await socket.waitFor((t) => t.includes('"id":"ws"'))) as {
        result: string;
      };
      socket.ws.close();
      expect(Number(overSocket.result)).toBe(7);
      const seen: number[] = [Number(await rpc("eth_blockNumber", []))];
      for (let i = 0; i < 8; i++) {
        const latest = (await rpc("eth_getBlockByNumber", ["latest", false])) as { number: string };
        seen.push(Number(latest.number));
      }
      expect(seen).toEqual(seen.map(() => 7));
    });
  });
}
