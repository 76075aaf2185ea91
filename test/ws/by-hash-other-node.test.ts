import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import {
  type LoopbackWsNode,
  SharedSubstrateChain,
  SUBSTRATE_GENESIS,
  startLoopbackWsNode,
  substrateNode,
  waitUntil,
} from "../support/loopback-ws-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A read by hash over a WebSocket whose node has not seen that block yet (Substrate's chain_getHeader
// answers null for it), for a block another node of the label has and served over HTTP: it is asked of
// that node, as over HTTP (docs/upstreams.md, "Answers across nodes").
describe("dot over a WebSocket: a block by hash its node has not seen yet", () => {
  const chains = [new SharedSubstrateChain(), new SharedSubstrateChain()];
  const nodes: LoopbackWsNode[] = [];
  let gw: RunningGateway;
  let restore: () => void;
  beforeAll(async () => {
    restore = resolveTestHosts();
    for (const chain of chains) {
      // a Polkadot node's genesis hash at block 0, as the prober checks it
      const base = substrateNode({ chain });
      const byNumber = base.results?.chain_getBlockHash as (params: unknown) => unknown;
      nodes.push(
        await startLoopbackWsNode({
          ...base,
          results: {
            ...base.results,
            chain_getBlockHash: (params: unknown) =>
              Array.isArray(params) && (params[0] === 0 || params[0] === "0x0")
                ? SUBSTRATE_GENESIS
                : byNumber(params),
          },
        }),
      );
    }
    gw = await startGateway({
      upstreams: { dot: nodes.map((n, i) => ({ url: n.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw, "dot", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
    restore?.();
  });

  it("the best block's hash a socket was told is a block on that socket, never null", async () => {
    const clients: Client[] = [];
    const url = `ws://dot.${DOMAIN}:${gw.port}/${KEYS.all}`;
    // a connection on each node
    for (let i = 0; i < 10 && nodes.some((n) => n.openConnections() === 0); i++)
      clients.push(await Client.open(url));
    await waitUntil(() => nodes.every((n) => n.openConnections() > 0), 3_000, "a socket on each node");
    // a block one node has made, the other not yet, which an HTTP caller was served
    const ahead = chains[0] as SharedSubstrateChain;
    ahead.produce();
    const http = await gw.call("dot", `/${KEYS.all}/`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "chain_getBlockHash", params: [ahead.head] }),
    });
    expect((http.json as { result: unknown }).result).toBe(SharedSubstrateChain.hash(ahead.head));
    const seen: unknown[] = [];
    for (const client of clients) {
      const best = (await client.call("chain_getBlockHash", [])).result;
      const header = await client.call("chain_getHeader", [best]);
      seen.push(
        `${best === SharedSubstrateChain.hash(ahead.head)} ${(header.result as { number?: string } | null)?.number ?? JSON.stringify(header.error ?? null)}`,
      );
    }
    for (const client of clients) client.close();
    const want = `true 0x${ahead.head.toString(16)}`;
    expect(seen).toEqual(seen.map(() => want));
  });
});
