import { describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A Bitcoin-style client follows the tip by polling getbestblockhash. Two nodes are at H and one takes block
// H + 1 between two probes: getbestblockhash, sent to either (both at the label's served head), may come
// from the node ahead and answer the new tip's hash, an answer with no height the served head can learn.
// The getblockcount after it went to the other node half the time and answered H: the caller held the
// hash of a tip the count said was not there yet. A hash the label has not answered before is now held
// while its node's head is read (registry `headHashes`, src/answers/head-hash.ts), and the count is never
// below it.
const endpoints = ["btc", "doge"].map((label) => endpointsByLabel.get(label) as Endpoint);
const H = 870_000;
const hashAt = (h: number) => h.toString(16).padStart(64, "0");

/** Two nodes at H behind a gateway whose probes see each once: none sees a new block during a test. */
async function twoNodes(endpoint: Endpoint) {
  const states: NodeState[] = [nodeState(endpoint, H), nodeState(endpoint, H)];
  const nodes: LoopbackNode[] = [];
  for (const s of states)
    nodes.push(
      await startLoopbackNode(
        softwareNode(endpoint, () => s, [""], {
          answers: { getbestblockhash: { result: ({ height }) => hashAt(height) } },
        }),
      ),
    );
  const gw = await startGateway({
    upstreams: { [endpoint.label]: nodes.map((n, i) => ({ url: n.url, name: `n${i}` })) },
    health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
  });
  await everyNodeInRotation(gw);
  const rpc = async (method: string) =>
    (
      (
        await gw.call(endpoint.label, `/${KEYS.all}/`, {
          body: JSON.stringify({ jsonrpc: "1.0", id: 1, method, params: [] }),
        })
      ).json as { result: unknown }
    ).result;
  const close = async () => {
    await gw.close();
    await Promise.all(nodes.map((n) => n.close()));
  };
  return { states, nodes, rpc, close };
}

describe.each(endpoints)(
  "$label: the tip's hash, then getblockcount, two nodes a block apart between probes",
  (endpoint) => {
    // each round on a gateway of its own: after one, the label's served head has left the node behind
    it.each([1, 2, 3])("round %i: no count below the tip whose hash the caller got", async () => {
      const { states, rpc, close } = await twoNodes(endpoint);
      try {
        const ahead = states[0] as NodeState;
        ahead.height += 1;
        let best: unknown;
        for (let i = 0; i < 20 && best !== hashAt(ahead.height); i++) best = await rpc("getbestblockhash");
        expect(best).toBe(hashAt(ahead.height));
        const counts: unknown[] = [];
        for (let i = 0; i < 8; i++) counts.push(await rpc("getblockcount"));
        expect(counts).toEqual(counts.map(() => ahead.height));
      } finally {
        await close();
      }
    });

    it("the hash answered last is answered again without a head read", async () => {
      const { nodes, rpc, close } = await twoNodes(endpoint);
      try {
        await rpc("getbestblockhash");
        const before = nodes.map((n) => n.requests.length);
        await rpc("getbestblockhash");
        await rpc("getbestblockhash");
        const sent = nodes.flatMap((n, i) =>
          n.requests.slice(before[i]).map((r) => (JSON.parse(r.body) as { method: string }).method),
        );
        expect(sent).toEqual(["getbestblockhash", "getbestblockhash"]);
      } finally {
        await close();
      }
    });
  },
);
