import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { nearBlockHash } from "../support/node-software.js";
import { nearBlockReads } from "../support/sdk-nodes.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A non-archival nearcore node garbage-collects blocks older than it keeps (5 epochs by default). Its
// `block` and `chunk` for such a block answer UNKNOWN_BLOCK with info {} (chain/jsonrpc-primitives
// types/blocks.rs RpcBlockError::UnknownBlock and types/chunks.rs RpcChunkError::UnknownBlock, whose
// error_message is skip_serializing), its data "DB Not Found Error: BLOCK: <hash> \n Cause: Unknown":
// there is no GARBAGE_COLLECTED_BLOCK for them, only for `query` (RpcQueryError). The loopback nearcore
// (sdk-nodes.ts nearBlockReads) answers so; the gateway reads the block from near-archive instead.

const WINDOW = 1_000;
const HEIGHT = 5_000_000;
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;

describe("nearcore's block and chunk for a block a non-archival node garbage-collected", () => {
  const nodes = new Map<string, LoopbackNode>();
  let gw: RunningGateway;

  /** The calls of `method` naming the old block: the gateway's own probes read `block` by finality. */
  const calls = (label: string, method: string) =>
    (nodes.get(label)?.requests ?? []).filter(
      (r) =>
        r.body.includes(`"method":"${method}"`) &&
        (r.body.includes(String(HEIGHT - 5_000)) || r.body.includes(nearBlockHash(HEIGHT - 5_000))),
    ).length;
  const rpc = (label: string, key: string, method: string, params: unknown) =>
    gw.call(label, `/${key}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method, params }),
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

  it("the non-archival node's own answer: UNKNOWN_BLOCK, info {}, at HTTP 200", async () => {
    const gc = HEIGHT - 5_000;
    const r = await fetch(nodes.get("near")?.url as string, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "block", params: { block_id: gc } }),
    });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({
      jsonrpc: "2.0",
      error: {
        name: "HANDLER_ERROR",
        cause: { info: {}, name: "UNKNOWN_BLOCK" },
        code: -32000,
        message: "Server error",
        data: `DB Not Found Error: BLOCK: ${nearBlockHash(gc)} \n Cause: Unknown`,
      },
      id: 1,
    });
  });

  for (const [method, params] of [
    ["block", { block_id: HEIGHT - 5_000 }],
    ["block", { block_id: nearBlockHash(HEIGHT - 5_000) }],
    ["block", [HEIGHT - 5_000]],
    ["chunk", { block_id: HEIGHT - 5_000, shard_id: 0 }],
    ["chunk", [[HEIGHT - 5_000, 0]]],
  ] as const) {
    it(`${method} ${JSON.stringify(params)}: read from near-archive once more; a key without archive access gets ARCHIVE_REQUIRED`, async () => {
      const archive = calls("near-archive", method);
      const r = await rpc("near", KEYS.all, method, params);
      expect(r.status, r.text).toBe(200);
      expect(r.json, r.text).toMatchObject({ id: 9, result: { header: {} } });
      expect(r.headers["x-upstream-tier"]).toBe("archive");
      expect(calls("near-archive", method)).toBe(archive + 1);
      const refused = await rpc("near", KEYS.noArchive, method, params);
      expect(refused.json, refused.text).toMatchObject({
        error: { code: -32045, data: { archiveLabel: "near-archive" } },
      });
    });
  }

  it("a block the non-archival node keeps is its own answer", async () => {
    const r = await rpc("near", KEYS.noArchive, "block", { block_id: HEIGHT - 10 });
    expect(r.json).toMatchObject({ result: { header: { height: HEIGHT - 10 } } });
    expect(r.headers["x-upstream-tier"]).toBe("full");
    const chunk = await rpc("near", KEYS.noArchive, "chunk", { block_id: HEIGHT - 10, shard_id: 1 });
    expect(chunk.json).toMatchObject({ result: { header: { height_included: HEIGHT - 10, shard_id: 1 } } });
  });
});
