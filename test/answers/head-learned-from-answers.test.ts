import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// With the answer cache on (the default), a read at the head whose answer shows the head (algod's account
// `round`, Bitcoin Core's getblockchaininfo `blocks`, Substrate's system_syncState `currentBlock`) teaches the
// label's served head (registry `heightIn`, `heightInPaths`): else the head call's answer kept for its head
// epoch is served after the caller saw a higher head. One loopback node per label, moving one block.

const H = 9_000_000;
const EXTRA: Readonly<Record<string, TypicalAnswer>> = {
  "GET /v2/accounts/AAAA": { result: ({ height }) => ({ address: "AAAA", amount: 1, round: height }) },
  getblockchaininfo: { result: ({ height }) => ({ chain: "main", blocks: height, headers: height }) },
  system_syncState: {
    result: ({ height }) => ({ startingBlock: 0, currentBlock: height, highestBlock: height }),
  },
};

describe("a cached head call never answers below a head another read just showed", () => {
  const nodes: LoopbackNode[] = [];
  const states = new Map<string, NodeState>();
  let gw: RunningGateway;

  beforeAll(async () => {
    const upstreams: Record<string, { url: string; name: string }[]> = {};
    for (const label of ["algo", "btc", "dot"]) {
      const endpoint = endpointsByLabel.get(label) as Endpoint;
      const state = nodeState(endpoint, H);
      states.set(label, state);
      const node = await startLoopbackNode(softwareNode(endpoint, () => state, [""], { answers: EXTRA }));
      nodes.push(node);
      upstreams[label] = [{ url: node.url, name: "only" }];
    }
    gw = await startGateway({
      upstreams,
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((node) => node.close()));
  });

  const rpc = async (label: string, method: string) =>
    (
      (
        await gw.call(label, `/${KEYS.all}/`, {
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: [] }),
          headers: { "content-type": "application/json" },
        })
      ).json as { result: never }
    ).result;

  const cases: [string, () => Promise<number>, () => Promise<number>][] = [
    [
      "algo",
      async () =>
        ((await gw.call("algo", `/${KEYS.all}/v2/status`)).json as { "last-round": number })["last-round"],
      async () => ((await gw.call("algo", `/${KEYS.all}/v2/accounts/AAAA`)).json as { round: number }).round,
    ],
    [
      "btc",
      () => rpc("btc", "getblockcount"),
      async () => ((await rpc("btc", "getblockchaininfo")) as { blocks: number }).blocks,
    ],
    [
      "dot",
      async () => Number(((await rpc("dot", "chain_getHeader")) as { number: string }).number),
      async () => ((await rpc("dot", "system_syncState")) as { currentBlock: number }).currentBlock,
    ],
  ];

  for (const [label, head, other] of cases)
    it(`${label}: head call, the node makes a block, another head read shows it, head call again`, async () => {
      const seen = [await head()];
      (states.get(label) as NodeState).height = H + 1;
      seen.push(await other());
      seen.push(await head());
      expect(seen).toEqual([H, H + 1, H + 1]);
    });
});
