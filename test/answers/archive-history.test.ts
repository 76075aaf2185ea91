import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type Responder, startLoopbackNode } from "../support/loopback-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// Reads of history a full node may have dropped, whatever block they name (registry `reads.archive.history`,
// docs/upstreams.md "Archive"): a geth full node answers a block, its receipts or its logs past its history
// expiry with code 4444 "pruned history unavailable" (core/history: PrunedHistoryError), and a transaction
// traced by its hash, re-executed on its block's pruned parent state, with -32000 "required historical state
// unavailable (reexec=128)" (eth/state_accessor.go). Such a read goes to the archive node once more for a
// key with archive access, and is ARCHIVE_REQUIRED for any other: never the node's raw error.

const HEIGHT = 20_000_000;
const OLD_BLOCK = "0x10";
const TX = `0x${"cd".repeat(32)}`;
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;

const OLD: Record<string, { error: { code: number; message: string }; result: unknown }> = {
  debug_traceTransaction: {
    error: { code: -32000, message: "required historical state unavailable (reexec=128)" },
    result: { type: "CALL", from: "0x01", to: "0x02", gas: "0x5208", gasUsed: "0x5208" },
  },
  eth_getLogs: {
    error: { code: 4444, message: "pruned history unavailable" },
    result: [{ address: "0x01", topics: [], data: "0x", blockNumber: OLD_BLOCK, logIndex: "0x0" }],
  },
  eth_getBlockByNumber: {
    error: { code: 4444, message: "pruned history unavailable" },
    result: { number: OLD_BLOCK, hash: `0x${"10".repeat(32)}`, parentHash: `0x${"0f".repeat(32)}` },
  },
  // geth's uncle reads by number return BlockByNumber's error as the block read does (internal/ethapi/api.go
  // GetUncleCountByBlockNumber, GetUncleByBlockNumberAndIndex: `return nil, err`; eth/api_backend.go
  // BlockByNumber: PrunedHistoryError below the history cutoff)
  eth_getUncleCountByBlockNumber: {
    error: { code: 4444, message: "pruned history unavailable" },
    result: "0x1",
  },
  eth_getUncleByBlockNumberAndIndex: {
    error: { code: 4444, message: "pruned history unavailable" },
    result: { number: "0xf", hash: `0x${"0e".repeat(32)}`, parentHash: `0x${"0d".repeat(32)}` },
  },
};

/** The old reads as a full node (pruned) or an archive node answers them; the rest is the software node's. */
function oldReads(pruned: boolean): Responder {
  return (request) => {
    if (request.method !== "POST" || request.body.startsWith("[")) return undefined;
    const { id, method, params } = JSON.parse(request.body) as {
      id: unknown;
      method: string;
      params: unknown[];
    };
    const old = OLD[method];
    if (old === undefined) return undefined;
    // a recent block, which every node keeps
    if (method === "eth_getBlockByNumber" && params[0] !== OLD_BLOCK)
      return { body: { jsonrpc: "2.0", id, result: { number: params[0], hash: `0x${"ab".repeat(32)}` } } };
    return {
      body: pruned ? { jsonrpc: "2.0", id, error: old.error } : { jsonrpc: "2.0", id, result: old.result },
    };
  };
}

describe("old history on a full label (loopback geth nodes)", () => {
  let full: LoopbackNode;
  let archive: LoopbackNode;
  let gw: RunningGateway;
  /** The callers' calls of `method` a node was asked (the prober reads blocks too, with ids of its own). */
  const asked = (node: LoopbackNode, method: string) =>
    node.requests.filter((r) => r.body.includes(`"${method}"`) && r.body.includes('"id":7')).length;

  beforeAll(async () => {
    full = await startLoopbackNode(
      firstOf(oldReads(true), softwareNode(endpoint("eth"), nodeState(endpoint("eth"), HEIGHT))),
    );
    archive = await startLoopbackNode(
      firstOf(
        oldReads(false),
        softwareNode(endpoint("eth-archive"), nodeState(endpoint("eth-archive"), HEIGHT)),
      ),
    );
    gw = await startGateway({
      upstreams: {
        eth: [{ url: full.url, name: "full" }],
        "eth-archive": [{ url: archive.url, name: "archive" }],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await eventually(
      () => gw.gateway.upstreams.groups().every((g) => g.served.height === HEIGHT),
      5_000,
      "both labels' heads served",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await full?.close();
    await archive?.close();
  });

  const reads: [string, unknown[], string][] = [
    ["debug_traceTransaction", [TX, { tracer: "callTracer" }], KEYS.dedicated],
    ["eth_getLogs", [{ fromBlock: OLD_BLOCK, toBlock: OLD_BLOCK }], KEYS.all],
    ["eth_getBlockByNumber", [OLD_BLOCK, false], KEYS.all],
    ["eth_getUncleCountByBlockNumber", [OLD_BLOCK], KEYS.all],
    ["eth_getUncleByBlockNumberAndIndex", [OLD_BLOCK, "0x0"], KEYS.all],
  ];
  for (const [method, params, key] of reads) {
    it(`${method}: the full node's refusal sends it to the archive node once more`, async () => {
      const before = asked(archive, method);
      const answer = await gw.call("eth", `/${key}`, { body: rpcBody(method, params, 7) });
      expect(answer.json).toEqual({ jsonrpc: "2.0", id: 7, result: OLD[method]?.result });
      expect(answer.headers["x-upstream-tier"]).toBe("archive");
      expect(asked(archive, method) - before).toBe(1);
    });
  }

  for (const [method, params] of reads.filter(([, , key]) => key === KEYS.all)) {
    it(`${method}: ARCHIVE_REQUIRED for a key without archive access, never the node's error`, async () => {
      const before = asked(archive, method);
      const answer = await gw.call("eth", `/${KEYS.noArchive}`, { body: rpcBody(method, params, 7) });
      expect(answer.text).not.toContain("pruned history");
      expect(answer.json).toMatchObject({
        id: 7,
        error: { data: { code: "ARCHIVE_REQUIRED", archiveLabel: "eth-archive" } },
      });
      expect(asked(archive, method)).toBe(before);
    });
  }

  it("an old log range wider than the split limit: each sub-range the full node refuses goes to the archive node", async () => {
    const wide = [{ fromBlock: OLD_BLOCK, toBlock: "0xbc8" }]; // 3,001 blocks: two sub-ranges
    const archived = await gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_getLogs", wide, 7) });
    const [log] = (OLD.eth_getLogs?.result ?? []) as unknown[];
    expect(archived.json).toEqual({ jsonrpc: "2.0", id: 7, result: [log, log] });
    const refused = await gw.call("eth", `/${KEYS.noArchive}`, { body: rpcBody("eth_getLogs", wide, 7) });
    expect(refused.text).not.toContain("pruned history");
    expect(refused.json).toMatchObject({ id: 7, error: { data: { code: "ARCHIVE_REQUIRED" } } });
  });

  it("a recent block's read goes as any read: every full node keeps it", async () => {
    const before = asked(archive, "eth_getBlockByNumber");
    const answer = await gw.call("eth", `/${KEYS.all}`, {
      body: rpcBody("eth_getBlockByNumber", ["0x1312cff", false], 7),
    });
    expect(answer.json).toMatchObject({ id: 7, result: { number: "0x1312cff" } });
    expect(asked(archive, "eth_getBlockByNumber")).toBe(before);
  });
});
