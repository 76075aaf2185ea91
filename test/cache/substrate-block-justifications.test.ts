import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { substrateHash, substrateNumber } from "../support/chain-answers.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// registry substrate `cache.hashHeightIn: { chain_getBlock: [block, header, number] }`: chain_getBlock at a
// hash is kept for good once its height is at or below GRANDPA's finalized head. But its answer is
// `SignedBlock { block, justifications }` (sc-service client `block()`: the justifications read from the
// backend at each call), and a justification is appended to a block after GRANDPA finalized it: BEEFY
// votes only on GRANDPA-finalized blocks (sc-consensus-beefy worker.rs `accepted_interval`: "Accept any vote
// for a GRANDPA finalized block") and, once it finalizes one, `backend.append_justification(hash,
// (BEEFY_ENGINE_ID, finality_proof.encode()))`. BEEFY runs behind GRANDPA on Polkadot and Kusama, so a block
// read between the two is kept without its BEEF justification, for good (and shared through Redis for 24 h):
// a bridge relayer or light client reading `justifications` from polkadot.js `api.rpc.chain.getBlock(hash)`
// never sees it.

describe("Substrate: chain_getBlock of a GRANDPA-final block that BEEFY finalizes afterwards", () => {
  const dot = endpointsByLabel.get("dot") as Endpoint;
  const chain = dot.chain as string;
  const H = 1_000;
  const state = nodeState(dot, H);
  /** BEEFY's best block: it follows GRANDPA's finalized head (H - 2 in the loopback's answers), lagging. */
  let beefyBest = H - 20;
  // sp_runtime::Justifications as serde writes it: (ConsensusEngineId = [u8; 4], EncodedJustification = Vec<u8>)
  const GRANDPA = [
    [70, 82, 78, 75],
    [1, 2, 3],
  ];
  const BEEF = [
    [66, 69, 69, 70],
    [4, 5, 6],
  ];
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(
      softwareNode(dot, () => state, [""], {
        answers: {
          chain_getBlock: {
            result: (s, params) => {
              const at = (params as unknown[])[0];
              const number = substrateNumber(chain, at);
              if (number === undefined || number > s.height) return null;
              return {
                block: {
                  header: {
                    parentHash: substrateHash(chain, Math.max(0, number - 1)),
                    number: `0x${number.toString(16)}`,
                    stateRoot: `0x${"11".repeat(32)}`,
                    extrinsicsRoot: `0x${"22".repeat(32)}`,
                    digest: { logs: [] },
                  },
                  extrinsics: [],
                },
                // engine ids FRNK (GRANDPA) and BEEF (BEEFY)
                justifications: number <= beefyBest ? [GRANDPA, BEEF] : [GRANDPA],
              };
            },
          },
        },
      }),
    );
    gw = await startGateway({
      upstreams: { dot: [{ url: node.url, name: "n0" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 2_000 },
    });
    await everyNodeInRotation(gw, "dot", 4_000);
    const group = gw.gateway.upstreams.group("dot", "/");
    await eventually(() => (group?.finalized ?? -1) >= H - 10, 4_000, "GRANDPA's finalized head learned");
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const read = async (number: number) => {
    const answer = await gw.call("dot", `/${KEYS.all}`, {
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "chain_getBlock",
        params: [substrateHash(chain, number)],
      }),
    });
    return {
      justifications: (answer.json as { result: { justifications: unknown } }).result.justifications,
      cache: answer.headers["x-cache"],
    };
  };

  it("answers the BEEFY justification the node holds once BEEFY finalized the block", async () => {
    const block = H - 10;
    // GRANDPA-final, not yet BEEFY-final: the node has its GRANDPA justification only
    expect(await read(block)).toEqual({ justifications: [GRANDPA], cache: "miss" });
    // BEEFY concludes a round at the block, and the chain moves on
    beefyBest = block;
    state.height += 3;
    const group = gw.gateway.upstreams.group("dot", "/");
    await eventually(() => group?.served.height === H + 3, 4_000, "the served head moved on");
    expect((await read(block)).justifications).toEqual([GRANDPA, BEEF]);
  });
});
