import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { nearBlockReads, nearChunkHash } from "../support/sdk-nodes.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// near-api-js's provider.chunk(chunkId) names a chunk by its hash (nearcore's ChunkReference::ChunkHash):
// a non-archival node that garbage-collected the chunk answers UNKNOWN_CHUNK ("Chunk Missing (unavailable
// on the node)", chain/jsonrpc-primitives types/chunks.rs RpcChunkError::UnknownChunk), as it does one it
// has not seen yet. The archive keeps every chunk: a key with archive access must get it from near-archive,
// as it gets the same chunk named by its block.

const WINDOW = 1_000;
const HEIGHT = 5_000_000;
const OLD = HEIGHT - 5_000;
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;

describe("nearcore's chunk by chunk_id for a chunk a non-archival node garbage-collected", () => {
  const nodes = new Map<string, LoopbackNode>();
  let gw: RunningGateway;

  const rpc = (key: string, params: unknown) =>
    gw.call("near", `/${key}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "chunk", params }),
      headers: { "content-type": "application/json" },
    });

  beforeAll(async () => {
    for (const label of ["near", "near-archive"]) {
      const e = endpoint(label);
      const keeps = label === "near" ? WINDOW : "archive";
      nodes.set(
        label,
        await startLoopbackNode(
          softwareNode(e, nodeState(e, HEIGHT), [""], { answers: nearBlockReads(keeps) }),
        ),
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
      "every label's served head from its first probe",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...nodes.values()].map((node) => node.close()));
  });

  for (const params of [{ chunk_id: nearChunkHash(OLD, 0) }, [nearChunkHash(OLD, 0)]])
    it(`chunk ${JSON.stringify(params)}: the archive's chunk for an archive key`, async () => {
      const r = await rpc(KEYS.all, params);
      expect(r.json, r.text).toMatchObject({
        id: 9,
        result: { header: { height_included: OLD, shard_id: 0 } },
      });
      expect(r.headers["x-upstream-tier"]).toBe("archive");
    });

  it("a chunk the non-archival node keeps is its own answer", async () => {
    const r = await rpc(KEYS.noArchive, { chunk_id: nearChunkHash(HEIGHT - 10, 1) });
    expect(r.json, r.text).toMatchObject({
      result: { header: { height_included: HEIGHT - 10, shard_id: 1 } },
    });
    expect(r.headers["x-upstream-tier"]).toBe("full");
  });
});
