import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// docs/cache.md, "The head, and reorgs": "A node whose head goes back below the label's finalized height
// (only a chain reverted or started again does that ...), while no other node in rotation is still at or
// past that height, takes every answer kept for the label with it, final ones too". For Bitcoin Core the
// finalized height is "a depth below the served head (depth: 6 for Bitcoin Core ...)".
//
// A real bitcoind does go back below that depth: `invalidateblock <hash>` (rpc/blockchain.cpp) rewinds its
// tip to the block's parent, and `generatetoaddress` then mines another branch; a regtest node started
// again on a wiped datadir has the same genesis (chainparams.cpp) and other blocks from height 1 on.
// The gateway compared a node's lower head only with a finalized height a node names, which a depth rule
// never has: the final answers of the replaced blocks stayed, for good.

describe("Bitcoin Core: the node's chain goes back 60 blocks (invalidateblock) and is mined again", () => {
  const btc = endpointsByLabel.get("btc") as Endpoint;
  const H = 100;
  const state = nodeState(btc, H);
  /** Which branch the node is on: 0 before invalidateblock, 1 after. */
  let branch = 0;
  const hashAt = (height: number) =>
    height === 0
      ? (btc.chain as string)
      : `${branch === 0 ? "aa" : "bb"}${height.toString(16).padStart(62, "0")}`;
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(
      softwareNode(btc, () => state, [""], {
        answers: {
          getblockhash: {
            result: (s, params) => {
              const height = Number((params as unknown[])[0]);
              return height <= s.height ? hashAt(height) : null;
            },
          },
        },
      }),
    );
    gw = await startGateway({
      upstreams: { btc: [{ url: node.url, name: "n0" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 2_000 },
    });
    await everyNodeInRotation(gw, "btc", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const read = async (height: number) => {
    const answer = await gw.call("btc", `/${KEYS.all}`, {
      body: JSON.stringify({ jsonrpc: "1.0", id: 1, method: "getblockhash", params: [height] }),
    });
    return { hash: (answer.json as { result: unknown }).result, cache: answer.headers["x-cache"] };
  };

  it("getblockhash(50) answers the new branch's block once the node is back past it", async () => {
    const group = gw.gateway.upstreams.group("btc", "/");
    expect(group?.served.height).toBe(H);
    // 50 is 50 below the head: final by the depth rule, kept for good
    expect(await read(50)).toEqual({ hash: hashAt(50), cache: "miss" });
    expect((await read(50)).cache).toBe("hit");
    // invalidateblock of the block at 41: the tip is 40, below the finalized height (94)
    state.height = 40;
    await eventually(() => group?.members[0]?.health.head === 40, 4_000, "the prober saw the head go back");
    branch = 1;
    // the node mines the other branch past the old head
    state.height = H + 5;
    await eventually(() => group?.served.height === H + 5, 6_000, "the served head moved on");
    await eventually(() => group?.members[0]?.health.head === H + 5, 4_000, "the node is back");
    // the node's answer now is the new branch's block at 50
    const again = await read(50);
    expect(again.hash).toBe(hashAt(50));
  });
});

// The same with finality at depth 0 (algod: "Algorand's blocks are final once made"): every round up to the
// head is kept for good. A localnet reset (algokit localnet reset, the sandbox's `reset`) starts the chain
// again from round 0 with the same genesis-id (the prober's chain check, GET /v2/transactions/params), and
// the node's head goes back below every kept round: the old network's blocks stay served.
describe("algod: the node's chain is started again (localnet reset) and makes new rounds", () => {
  const algo = endpointsByLabel.get("algo") as Endpoint;
  const H = 100;
  const state = nodeState(algo, H);
  let run = 0;
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(
      softwareNode(algo, () => state, [""], {
        answers: {
          "GET /v2/blocks/50": {
            result: (s) => (s.height >= 50 ? { block: { rnd: 50, ts: 1_700_000_000 + run * 1000 } } : null),
          },
        },
      }),
    );
    gw = await startGateway({
      upstreams: { algo: [{ url: node.url, name: "n0" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 2_000 },
    });
    await everyNodeInRotation(gw, "algo", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const read = async () => {
    const answer = await gw.call("algo", `/${KEYS.all}/v2/blocks/50`, { method: "GET" });
    return { json: answer.json, cache: answer.headers["x-cache"] };
  };

  it("GET /v2/blocks/50 answers the new chain's round once the node is back past it", async () => {
    const group = gw.gateway.upstreams.group("algo", "/");
    expect(await read()).toEqual({ json: { block: { rnd: 50, ts: 1_700_000_000 } }, cache: "miss" });
    expect((await read()).cache).toBe("hit");
    // reset: round 3 of a new chain with the same genesis-id
    run = 1;
    state.height = 3;
    await eventually(() => group?.members[0]?.health.head === 3, 4_000, "the prober saw the head go back");
    state.height = H + 5;
    await eventually(() => group?.served.height === H + 5, 6_000, "the served head moved on");
    expect((await read()).json).toEqual({ block: { rnd: 50, ts: 1_700_001_000 } });
  });
});
