import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type SeenRequest, startLoopbackNode } from "../support/loopback-node.js";
import { nearUnknownBlock } from "../support/node-software.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// What a user saw: `block` (or `query`) at a recent height NEAR skipped (a producer missed its slot, so no
// block has that height on any node) got 403 ARCHIVE_REQUIRED on a key without archive access, and on an
// archive key went to near-archive and was priced at the archive's rate, though the full node's answer,
// UNKNOWN_BLOCK, was the one every node gives. nearcore's `block` at such a height answers UNKNOWN_BLOCK with
// "DB Not Found Error: BLOCK HEIGHT: <n>" (no hash indexed at the height); a block a non-archival node
// garbage-collected is "BLOCK: <hash>" (its height index kept), and `query` says GARBAGE_COLLECTED_BLOCK.
const HEIGHT = 5_000_000;
const SKIPPED = HEIGHT - 10;
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;

const skippedHeight = (request: SeenRequest) => {
  const call = JSON.parse(request.body) as { id: unknown; method: string; params: { block_id?: unknown } };
  if (call.params?.block_id !== SKIPPED) return undefined;
  if (call.method === "block")
    return {
      status: 200,
      body: { jsonrpc: "2.0", error: nearUnknownBlock(`BLOCK HEIGHT: ${SKIPPED}`), id: call.id },
    };
  // query's RpcQueryError::UnknownBlock (chain/jsonrpc-primitives types/query.rs): the view client answers
  // GarbageCollectedBlock for a height below the node's tail, UnknownBlock for one with no block above it
  if (call.method === "query")
    return {
      status: 200,
      body: {
        jsonrpc: "2.0",
        error: {
          name: "HANDLER_ERROR",
          cause: { name: "UNKNOWN_BLOCK", info: { block_reference: { block_id: SKIPPED } } },
          code: -32000,
          message: "Server error",
          data: `Block either has never been observed on the node or has been garbage collected: BlockId(Height(${SKIPPED}))`,
        },
        id: call.id,
      },
    };
  return undefined;
};

describe("NEAR: a recent height with no block (a skipped height)", () => {
  const nodes = new Map<string, LoopbackNode>();
  let gw: RunningGateway;
  const blockCalls = (label: string) =>
    (nodes.get(label)?.requests ?? []).filter((r) => r.body.includes('"method":"block"')).length;
  const block = (key: string) =>
    gw.call("near", `/${key}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "block", params: { block_id: SKIPPED } }),
      headers: { "content-type": "application/json" },
    });

  beforeAll(async () => {
    for (const label of ["near", "near-archive"]) {
      const e = endpoint(label);
      nodes.set(
        label,
        await startLoopbackNode(firstOf(skippedHeight, softwareNode(e, nodeState(e, HEIGHT)))),
      );
    }
    gw = await startGateway({
      upstreams: Object.fromEntries(
        [...nodes].map(([label, node]) => [label, [{ url: node.url, name: label }]]),
      ),
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await eventually(
      () => gw.gateway.upstreams.groups().every((g) => g.served.height === HEIGHT),
      5000,
      "heads",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...nodes.values()].map((node) => node.close()));
  });

  it("a key without archive access gets nearcore's UNKNOWN_BLOCK, not ARCHIVE_REQUIRED", async () => {
    const r = await block(KEYS.noArchive);
    expect(r.text).not.toContain("ARCHIVE_REQUIRED");
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ id: 9, error: { cause: { name: "UNKNOWN_BLOCK" } } });
  });

  it("query at that height: a key without archive access gets nearcore's UNKNOWN_BLOCK, not ARCHIVE_REQUIRED", async () => {
    const r = await gw.call("near", `/${KEYS.noArchive}`, {
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 9,
        method: "query",
        params: { request_type: "view_account", account_id: "a.near", block_id: SKIPPED },
      }),
      headers: { "content-type": "application/json" },
    });
    expect(r.text).not.toContain("ARCHIVE_REQUIRED");
    expect(r.json).toMatchObject({ id: 9, error: { cause: { name: "UNKNOWN_BLOCK" } } });
  });

  it("an archive key gets the full node's answer, with no second call to near-archive at the archive's price", async () => {
    const archive = blockCalls("near-archive");
    const r = await block(KEYS.all);
    expect(r.json).toMatchObject({ id: 9, error: { cause: { name: "UNKNOWN_BLOCK" } } });
    expect(r.headers["x-upstream-tier"]).toBe("full");
    expect(blockCalls("near-archive")).toBe(archive);
  });
});
