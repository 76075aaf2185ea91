import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type SeenRequest, startLoopbackNode } from "../support/loopback-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// What a user saw: an indexer walking basechain (workchain 0) blocks, getBlockTransactions of a shard block
// older than the full liteserver keeps, got its raw HTTP 500 "LITE_SERVER_NOTREADY: seqno not in db" on an
// archive key (never ton-archive's answer), and on a key without archive access that raw error instead of
// 403 ARCHIVE_REQUIRED. ton-blockchain/ton#832, the issue the registry's toncenter `reads.archive` cites:
// `getBlockTransactions?workchain=0&shard=4611686018427387904&seqno=40664737` answers so. A shard block's
// seqno counts its own chain's blocks, not the masterchain's the head counts (`reads.when`: workchain -1),
// so the read names no height to tell its age by: a full node is asked first, and its refusal decides.
const HEIGHT = 5_000_000;
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;
const params = { workchain: 0, shard: "4611686018427387904", seqno: 40_664_737, count: 40 };
const recent = { ...params, seqno: 50_000_000 };

const notInDb = (request: SeenRequest) =>
  request.body.includes('"method":"getBlockTransactions"') && request.body.includes(`"seqno":${params.seqno}`)
    ? { status: 500, body: { ok: false, error: "LITE_SERVER_NOTREADY: seqno not in db", code: 500 } }
    : undefined;

describe("TON: a basechain block's transactions the full liteserver no longer keeps", () => {
  const nodes = new Map<string, LoopbackNode>();
  let gw: RunningGateway;
  const calls = (label: string) =>
    (nodes.get(label)?.requests ?? []).filter((r) => r.body.includes('"method":"getBlockTransactions"'))
      .length;
  const rpc = (key: string, at = params) =>
    gw.call("ton", `/${key}/jsonRPC`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "getBlockTransactions", params: at }),
      headers: { "content-type": "application/json" },
    });

  beforeAll(async () => {
    const e = endpoint("ton");
    const a = endpoint("ton-archive");
    const transactions = {
      answers: {
        getBlockTransactions: {
          result: () => ({
            "@type": "blocks.transactions",
            incomplete: false,
            req_count: 40,
            transactions: [],
          }),
        },
      },
    };
    nodes.set(
      "ton",
      await startLoopbackNode(firstOf(notInDb, softwareNode(e, nodeState(e, HEIGHT), [""], transactions))),
    );
    nodes.set(
      "ton-archive",
      await startLoopbackNode(softwareNode(a, nodeState(a, HEIGHT), [""], transactions)),
    );
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

  it("an archive key gets ton-archive's answer", async () => {
    const archive = calls("ton-archive");
    const r = await rpc(KEYS.all);
    expect(r.text).not.toContain("not in db");
    expect(r.json).toMatchObject({ ok: true, result: { "@type": "blocks.transactions" } });
    expect(r.headers["x-upstream-tier"]).toBe("archive");
    expect(calls("ton-archive")).toBe(archive + 1);
  });

  it("a shard block the full liteserver has is its answer, for any key, with no call to ton-archive", async () => {
    const archive = calls("ton-archive");
    for (const key of [KEYS.all, KEYS.noArchive]) {
      const r = await rpc(key, recent);
      expect(r.json).toMatchObject({ ok: true });
      expect(r.headers["x-upstream-tier"]).toBe("full");
    }
    expect(calls("ton-archive")).toBe(archive);
  });

  it("a key without archive access gets ARCHIVE_REQUIRED naming ton-archive, never the node's raw error", async () => {
    const r = await rpc(KEYS.noArchive);
    expect(r.text).not.toContain("not in db");
    expect(r.status).toBe(403);
    expect(r.text).toContain("ton-archive");
  });
});
