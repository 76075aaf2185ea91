import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// Bitcoin Core 28 reads at its tip that say the tip's height, asked with no block (rpc/blockchain.cpp):
// getdeploymentinfo ({hash, height, deployments}: "requested block hash (or tip)", "... height (or tip)")
// and getchainstates ({headers, chainstates: [{blocks, bestblockhash, ...}]}). Two nodes one block apart,
// both in rotation: after getblockcount answered H + 1, no answer may say H.

const PROBE_MS = 100;
const H = 870_000;
const TRIES = 8;
const btc = endpointsByLabel.get("btc") as Endpoint;
const tipHash = (h: number) => h.toString(16).padStart(64, "0");

const EXTRA: Readonly<Record<string, TypicalAnswer>> = {
  getdeploymentinfo: {
    result: ({ height }) => ({
      hash: tipHash(height),
      height,
      deployments: { segwit: { type: "buried", active: true, height: 481_824 } },
    }),
  },
  gettxoutsetinfo: {
    result: ({ height }) => ({
      height,
      bestblock: tipHash(height),
      txouts: 180_000_000,
      bogosize: 13_000_000_000,
      hash_serialized_3: "aa".repeat(32),
      total_amount: 19_800_000,
      transactions: 120_000_000,
      disk_size: 11_000_000_000,
    }),
  },
  getchainstates: {
    result: ({ height }) => ({
      headers: height,
      chainstates: [
        {
          blocks: height,
          bestblockhash: tipHash(height),
          difficulty: 1,
          verificationprogress: 1,
          coins_db_cache_bytes: 1,
          coins_tip_cache_bytes: 1,
          validated: true,
        },
      ],
    }),
  },
};

describe("Bitcoin Core reads at the tip that name its height, two nodes one block apart", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;

  beforeAll(async () => {
    for (const h of [H + 1, H])
      nodes.push(await startLoopbackNode(softwareNode(btc, nodeState(btc, h), [""], { answers: EXTRA })));
    gw = await startGateway({
      upstreams: { btc: nodes.map((n, i) => ({ url: n.url, name: i === 0 ? "ahead" : "behind" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: PROBE_MS },
    });
    await everyNodeInRotation(gw, undefined, 40 * PROBE_MS);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
  });

  const rpc = async (method: string, id: number, key: string = KEYS.all) => {
    const got = await gw.call("btc", `/${key}/`, {
      body: JSON.stringify({ jsonrpc: "1.0", id, method, params: [] }),
      headers: { "content-type": "text/plain" },
    });
    return got.json as { result?: Record<string, unknown> & number };
  };

  it("getdeploymentinfo: height is the head just served, never the block before", async () => {
    const seen: unknown[] = [];
    for (let i = 0; i < TRIES; i++) {
      seen.push(await rpc("getblockcount", i).then((a) => a.result));
      seen.push((await rpc("getdeploymentinfo", i)).result?.height);
    }
    expect(seen).toEqual(seen.map(() => H + 1));
  });

  it("getchainstates: blocks is the head just served, never the block before", async () => {
    const seen: unknown[] = [];
    for (let i = 0; i < TRIES; i++) {
      seen.push(await rpc("getblockcount", i).then((a) => a.result));
      const states = (await rpc("getchainstates", i)).result?.chainstates as unknown as { blocks: number }[];
      seen.push(states?.[0]?.blocks);
    }
    expect(seen).toEqual(seen.map(() => H + 1));
  });

  it("gettxoutsetinfo (a dedicated node's call): height is the head just served, never the block before", async () => {
    const seen: unknown[] = [];
    for (let i = 0; i < TRIES; i++) {
      seen.push(await rpc("getblockcount", i, KEYS.dedicated).then((a) => a.result));
      seen.push((await rpc("gettxoutsetinfo", i, KEYS.dedicated)).result?.height);
    }
    expect(seen).toEqual(seen.map(() => H + 1));
  });
});
