import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { NEAR_KEPT_BLOCKS, nearBlockReads } from "../support/sdk-nodes.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// nearcore's WebSocket is bridged over HTTP to one node: a socket on a node a block behind the head the
// label served is told the head block (its read at the head goes to a node there), and its read of that
// block by hash must find it, not nearcore's UNKNOWN_BLOCK from its own node.
const H = 140_000_000;
const near = endpointsByLabel.get("near") as Endpoint;

describe("near over a WebSocket: the head block by hash on a socket whose node is behind", () => {
  const states: NodeState[] = [nodeState(near, H), nodeState(near, H)];
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;
  let restore: () => void;
  beforeAll(async () => {
    restore = resolveTestHosts();
    for (const state of states)
      nodes.push(
        await startLoopbackNode(
          softwareNode(near, () => state, [""], { answers: nearBlockReads(NEAR_KEPT_BLOCKS) }),
        ),
      );
    gw = await startGateway({
      upstreams: { near: nodes.map((n, i) => ({ url: n.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw, "near", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
    restore?.();
  });

  it("block({block_id: <the head's hash>}) answers the block on every socket", async () => {
    const url = `ws://near.${DOMAIN}:${gw.port}/${KEYS.all}`;
    const clients: Client[] = [];
    for (let i = 0; i < 6; i++) clients.push(await Client.open(url));
    // a block one node has made, the other not yet, which an HTTP caller was served
    (states[0] as NodeState).height = H + 1;
    const http = await gw.call("near", `/${KEYS.all}/`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "block", params: { block_id: H + 1 } }),
    });
    expect((http.json as { result?: { header?: { height?: number } } }).result?.header?.height).toBe(H + 1);
    const seen: string[] = [];
    for (const client of clients) {
      const head = await client.call("block", { finality: "optimistic" } as unknown as unknown[]);
      const { hash, height } = (head.result as { header: { hash: string; height: number } }).header;
      const byHash = await client.call("block", { block_id: hash } as unknown as unknown[]);
      const found = (byHash.result as { header?: { height?: number } } | undefined)?.header?.height;
      seen.push(`${height} ${found ?? JSON.stringify(byHash.error)}`);
    }
    for (const client of clients) client.close();
    expect(seen).toEqual(seen.map(() => `${H + 1} ${H + 1}`));
  });
});
