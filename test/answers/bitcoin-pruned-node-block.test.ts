import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { NodeRejection } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// Bitcoin Core run with -prune keeps the block index (getblockhash, getblockheader answer every height)
// but deletes old block files: getblock of a block below its pruneheight (getblockchaininfo's
// `pruned: true, pruneheight`) is refused with RPC_MISC_ERROR (-1) "Block not available (pruned data)"
// (src/rpc/blockchain.cpp CheckBlockDataAvailability, v26-v28; HTTP 500 to a 1.0 call). A label whose
// nodes are a pruned node and one that keeps every block (the registry's full class: "a pruned-or-not full
// node") has the block: the caller, who got the hash from getblockhash, must get it, as a block a node
// has not seen yet ("Block not found") is asked of another node.

const H = 870_000;
const PRUNE_HEIGHT = 869_000;
const OLD = 100_000;
const btc = endpointsByLabel.get("btc") as Endpoint;
const hashAt = (height: number) => height.toString(16).padStart(64, "0");
const heightOf = (hash: unknown) => (typeof hash === "string" ? Number.parseInt(hash, 16) : -1);

const answers = (pruned: boolean): Readonly<Record<string, TypicalAnswer>> => ({
  getblockchaininfo: {
    result: ({ height }) => ({
      chain: "main",
      blocks: height,
      headers: height,
      bestblockhash: hashAt(height),
      pruned,
      ...(pruned ? { pruneheight: PRUNE_HEIGHT, automatic_pruning: true, prune_target_size: 576716800 } : {}),
    }),
  },
  getblock: {
    result: ({ height }, params) => {
      const at = heightOf(Array.isArray(params) ? params[0] : (params as { blockhash?: unknown }).blockhash);
      if (at < 0 || at > height) throw new NodeRejection(-5, "Block not found");
      if (pruned && at < PRUNE_HEIGHT) throw new NodeRejection(-1, "Block not available (pruned data)");
      return "00000020".padEnd(160, "0");
    },
  },
  // by height or hash, its block read whole (GetBlockChecked, then its undo data: the same -1 when pruned)
  getblockstats: {
    result: ({ height }, params) => {
      const named = Array.isArray(params)
        ? params[0]
        : (params as { hash_or_height?: unknown }).hash_or_height;
      const at = typeof named === "number" ? named : heightOf(named);
      if (typeof named === "number" && at > height)
        throw new NodeRejection(-8, `Target block height ${at} after current tip ${height}`);
      if (at < 0 || at > height) throw new NodeRejection(-5, "Block not found");
      if (pruned && at < PRUNE_HEIGHT) throw new NodeRejection(-1, "Block not available (pruned data)");
      return { height: at, blockhash: hashAt(at), txs: 1 };
    },
  },
});

describe("Bitcoin Core: a pruned node beside one that keeps every block", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;
  beforeAll(async () => {
    for (const pruned of [true, false])
      nodes.push(
        await startLoopbackNode(softwareNode(btc, nodeState(btc, H), [""], { answers: answers(pruned) })),
      );
    gw = await startGateway({
      upstreams: { btc: nodes.map((n, i) => ({ url: n.url, name: i === 0 ? "pruned" : "whole" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw, undefined, 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
  });

  it("getblock(hash, 0) of a block below the pruned node's pruneheight answers the block every time", async () => {
    const seen: string[] = [];
    for (let id = 1; id <= 10; id++) {
      const r = await gw.call("btc", `/${KEYS.all}/`, {
        body: JSON.stringify({ jsonrpc: "1.0", id, method: "getblock", params: [hashAt(OLD), 0] }),
        headers: { "content-type": "text/plain" },
      });
      seen.push(`${r.status} ${r.text.trim()}`);
    }
    expect(seen.filter((s) => !s.startsWith("200 "))).toEqual([]);
    // the pruned node was asked: the gateway did not merely happen to pick the other one
    expect(nodes[0]?.requests.some((s) => s.body.includes('"getblock"'))).toBe(true);
  });

  it("getblockstats(height) of a block below the pruned node's pruneheight answers its stats every time", async () => {
    // bitcoin-cli getblockstats 100000: by height, which both nodes have passed; the pruned one holds no
    // block file for it
    const seen: string[] = [];
    for (let id = 1; id <= 10; id++) {
      const r = await gw.call("btc", `/${KEYS.all}/`, {
        body: JSON.stringify({ jsonrpc: "1.0", id, method: "getblockstats", params: [OLD] }),
        headers: { "content-type": "text/plain" },
      });
      seen.push(`${r.status} ${r.text.trim()}`);
    }
    expect(seen.filter((s) => !s.startsWith("200 "))).toEqual([]);
    expect(nodes[0]?.requests.some((s) => s.body.includes('"getblockstats"'))).toBe(true);
  });
});
