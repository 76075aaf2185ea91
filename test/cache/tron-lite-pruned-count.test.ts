import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type Responder, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A lite fullnode (java-tron started from a lite snapshot, with openHistoryQueryWhenLiteFN so its
// LiteFnQueryHttpFilter lets gettransactioncountbyblocknum through) holds no block below its snapshot:
// Wallet.getTransactionCountByBlockNum catches the store's ItemNotFoundException and answers 0, which
// GetTransactionCountByBlockNumServlet prints as `{"count": 0}` (println). That is no block's count for
// good: a full node answers the block's own count, and the lite node's 0 must not be kept in its place.

const HEIGHT = 5_000;
/**
 * The lite node's first block past genesis: its snapshot keeps the genesis block and the last 65,536
 * (plugins DbLite.fillSnapshotBlockAndTransDb), so the chain check's block 0 reads as a full node's.
 */
const FIRST = 4_000;
const OLD = 10;
const trx = endpointsByLabel.get("trx") as Endpoint;

/** gettransactioncountbyblocknum as java-tron answers it: the lite node 0 below its first block. */
function countOf(lite: boolean): Responder {
  return (request) => {
    if (request.method !== "POST" || !request.url.endsWith("/wallet/gettransactioncountbyblocknum"))
      return undefined;
    const { num } = JSON.parse(request.body) as { num: number };
    const count = lite && num > 0 && num < FIRST ? 0 : 3;
    return { body: `{"count": ${count}}\n` };
  };
}

describe("java-tron: a lite fullnode's count of a block it pruned", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;

  beforeAll(async () => {
    nodes = await Promise.all(
      [true, false].map((lite) =>
        startLoopbackNode(
          firstOf(
            countOf(lite),
            softwareNode(trx, () => nodeState(trx, HEIGHT), [""]),
          ),
        ),
      ),
    );
    gw = await startGateway({
      upstreams: {
        trx: Object.fromEntries(
          trx.mounts.map((m) => [m.path, nodes.map((node, i) => ({ url: node.url, name: `n${i}` }))]),
        ),
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 60_000 },
    });
    await everyNodeInRotation(gw, "trx", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  const count = async () => {
    const answer = await gw.call("trx", `/${KEYS.all}/wallet/gettransactioncountbyblocknum`, {
      body: JSON.stringify({ num: OLD }),
    });
    return answer.json;
  };

  it("is not kept for good: the next caller, sent to a full node, reads the block's own count", async () => {
    gw.gateway.cordon({ label: "trx", upstream: "n1", cordoned: true });
    try {
      expect(await count()).toEqual({ count: 0 });
    } finally {
      gw.gateway.cordon({ label: "trx", upstream: "n1", cordoned: false });
    }
    gw.gateway.cordon({ label: "trx", upstream: "n0", cordoned: true });
    try {
      expect(await count()).toEqual({ count: 3 });
      // the full node's count is the block's, and is kept
      const asked = nodes[1]?.requests.length ?? 0;
      expect(await count()).toEqual({ count: 3 });
      expect(nodes[1]?.requests.filter((r) => r.url.endsWith("countbyblocknum")).length).toBe(
        nodes[1]?.requests.slice(0, asked).filter((r) => r.url.endsWith("countbyblocknum")).length,
      );
    } finally {
      gw.gateway.cordon({ label: "trx", upstream: "n0", cordoned: false });
    }
  });
});
