import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { LabelUpstreams } from "../../src/config/types.js";
import type { Endpoint } from "../../src/registry/types.js";
import { CHAIN_ANSWERS, FINALITY_ANSWERS } from "../support/chain-answers.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// Reads that answer from the node's head, which an audit saw alternate between two nodes one block apart
// (docs/upstreams.md, "Answers across nodes"): behind two loopback nodes of each software, the one ahead
// at h + 1 and the one behind at h, both in rotation, each answer is the one ahead's.

const PROBE_MS = 100;

const tronBlock = (num: number) => ({
  blockID: `${num.toString(16).padStart(16, "0")}${"9c".repeat(24)}`,
  block_header: { raw_data: { number: num, timestamp: 1_735_689_600_000 } },
});

/** The calls these nodes answer beyond their software's head and chain calls, as the real software does. */
const EXTRA_ANSWERS: Readonly<Record<string, TypicalAnswer>> = {
  // polkadot-sdk substrate/client/rpc-api/src/chain/mod.rs: chain_getHead is an alias of chain_getBlockHash
  // (#[method(name = "chain_getBlockHash", aliases = ["chain_getHead"])]), null for a block past the best
  chain_getHead: CHAIN_ANSWERS.chain_getBlockHash as TypicalAnswer,
  // polkadot-sdk substrate/client/rpc/src/system/mod.rs system_sync_state: SyncState {startingBlock,
  // currentBlock (the best block), highestBlock}
  system_syncState: {
    result: ({ height }) => ({ startingBlock: 0, currentBlock: height, highestBlock: height }),
  },
  // java-tron GetBlockByLatestNumServlet: the newest `num` blocks as a BlockList, {"block": [...]}
  "POST /wallet/getblockbylatestnum": {
    result: ({ height }, body) => {
      const num = Number((body as { num?: unknown } | undefined)?.num ?? 0);
      const blocks = [];
      for (let n = Math.max(1, height - num + 1); n <= height; n++) blocks.push(tronBlock(n));
      return { block: blocks };
    },
  },
};

const HEIGHT = 2_000_000;

describe("reads at the head beyond the head call: Substrate and TRON (loopback nodes one block apart)", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;

  beforeAll(async () => {
    const upstreams: Record<string, LabelUpstreams> = {};
    for (const label of ["dot", "trx"]) {
      const endpoint = endpointsByLabel.get(label) as Endpoint;
      const pair = await Promise.all(
        [HEIGHT + 1, HEIGHT].map((h) =>
          startLoopbackNode(softwareNode(endpoint, nodeState(endpoint, h), [""], { answers: EXTRA_ANSWERS })),
        ),
      );
      nodes.push(...pair);
      const list = pair.map((node, n) => ({ url: node.url, name: n === 0 ? "ahead" : "behind" }));
      upstreams[label] =
        endpoint.mounts.length === 1 ? list : Object.fromEntries(endpoint.mounts.map((m) => [m.path, list]));
    }
    gw = await startGateway({ upstreams, health: { ...DEFAULT_HEALTH, probeIntervalMs: PROBE_MS } });
    await everyNodeInRotation(gw, undefined, 40 * PROBE_MS);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((node) => node.close()));
  });

  const rpc = async (method: string, params: unknown[], id: number) => {
    const got = await gw.call("dot", `/${KEYS.all}/`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      headers: { "content-type": "application/json" },
    });
    expect(got.status, got.text).toBe(200);
    return (got.json as { result: unknown }).result;
  };

  it("Substrate: chain_getHead names the newest block, which the node behind has not; the sync state and finalized head stay", async () => {
    const hashes = new Set<unknown>();
    const current: number[] = [];
    const finalized = new Set<unknown>();
    for (let i = 0; i < 8; i++) {
      hashes.add(await rpc("chain_getHead", [HEIGHT + 1], i));
      current.push(((await rpc("system_syncState", [], i)) as { currentBlock: number }).currentBlock);
      finalized.add(await rpc("chain_getFinalizedHead", [], i));
    }
    expect([...hashes]).not.toContain(null);
    expect(hashes.size).toBe(1);
    expect(current).toEqual(current.map(() => HEIGHT + 1));
    expect([...finalized]).toEqual([
      (FINALITY_ANSWERS.chain_getFinalizedHead as TypicalAnswer).result(
        nodeState(endpointsByLabel.get("dot") as Endpoint, HEIGHT + 1),
      ),
    ]);
  });

  const tron = async (path: string, body: unknown) => {
    const got = await gw.call("trx", `/${KEYS.all}${path}`, {
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
    });
    expect(got.status, got.text).toBe(200);
    return ((got.json as { block?: ReturnType<typeof tronBlock>[] }).block ?? []).map(
      (b) => b.block_header.raw_data.number,
    );
  };

  it("TRON: getblockbylatestnum is the newest block, never the one before", async () => {
    for (let i = 0; i < 8; i++)
      expect(await tron("/wallet/getblockbylatestnum", { num: 1 })).toEqual([HEIGHT + 1]);
  });
});
