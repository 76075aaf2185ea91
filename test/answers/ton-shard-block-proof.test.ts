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

// toncenter's getShardBlockProof names its block as getBlockHeader does ({workchain, shard, seqno}, and an
// optional from_seqno of the masterchain): ton-http-api looks the block up first (pyTON/main.py
// get_shard_block_proof; tonlib blocks.lookupBlock then blocks.getShardBlockProof), and a liteserver answers
// a block after its last one "ltdb: block not found" and one before the first it keeps "seqno not in db"
// (ton-blockchain/ton validator/db archive-manager.cpp, archive-slice.cpp), tonlib's LITE_SERVER_NOTREADY
// at HTTP 500. What a user saw: the proof of the head block, asked right after getMasterchainInfo named it,
// failed on the node behind about half the time; the proof of an old block reached the caller as the full
// liteserver's raw "seqno not in db", on an archive key too.

const H = 50_000_000;
const KEPT = 1000;
const MASTER = "-9223372036854775808";

const proof = (keeps: boolean): TypicalAnswer => ({
  result: ({ height }, params) => {
    const seqno = Number((params as { seqno?: unknown }).seqno);
    if (seqno > height) throw new NodeRejection(500, "LITE_SERVER_NOTREADY: ltdb: block not found");
    if (!keeps && seqno < height - KEPT)
      throw new NodeRejection(
        500,
        `LITE_SERVER_NOTREADY: cannot find block (-1,8000000000000000) seqno=${seqno}: seqno not in db`,
      );
    return {
      "@type": "blocks.shardBlockProof",
      from: { "@type": "ton.blockIdExt", workchain: -1, seqno: height },
      mc_id: { "@type": "ton.blockIdExt", workchain: -1, seqno },
      links: [],
      mc_proof: [],
    };
  },
});

describe("ton: getShardBlockProof, two nodes one block apart and ton-archive", () => {
  let nodes: LoopbackNode[];
  let archive: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    const ton = endpointsByLabel.get("ton") as Endpoint;
    const tonArchive = endpointsByLabel.get("ton-archive") as Endpoint;
    nodes = await Promise.all(
      [H + 1, H].map((h) =>
        startLoopbackNode(
          softwareNode(ton, nodeState(ton, h), [""], { answers: { getShardBlockProof: proof(false) } }),
        ),
      ),
    );
    archive = await startLoopbackNode(
      softwareNode(tonArchive, nodeState(tonArchive, H + 1), [""], {
        answers: { getShardBlockProof: proof(true) },
      }),
    );
    gw = await startGateway({
      upstreams: {
        ton: nodes.map((node, n) => ({ url: node.url, name: n === 0 ? "ahead" : "behind" })),
        "ton-archive": [{ url: archive.url, name: "archive" }],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "ton");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...(nodes ?? []), archive].filter(Boolean).map((node) => node.close()));
  });

  const rpc = async (key: string, method: string, params: unknown, id: number) =>
    gw.call("ton", `/${key}/jsonRPC`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      headers: { "content-type": "application/json" },
    });

  it("the head block's proof after getMasterchainInfo: never the node behind's \"block not found\"", async () => {
    const seen: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      const head = (await rpc(KEYS.noArchive, "getMasterchainInfo", {}, i)).json as {
        result: { last: { seqno: number } };
      };
      expect(head.result.last.seqno).toBe(H + 1);
      const got = await rpc(
        KEYS.noArchive,
        "getShardBlockProof",
        { workchain: -1, shard: MASTER, seqno: H + 1 },
        i,
      );
      seen.push((got.json as { ok?: boolean }).ok ?? got.text);
    }
    expect(seen).toEqual(seen.map(() => true));
  });

  it("an old block's proof: ton-archive's answer, or ARCHIVE_REQUIRED", async () => {
    const old = { workchain: -1, shard: MASTER, seqno: H - 5 * KEPT };
    const served = await rpc(KEYS.all, "getShardBlockProof", old, 1);
    expect(served.json).toMatchObject({ ok: true, result: { mc_id: { seqno: H - 5 * KEPT } } });
    expect(served.headers["x-upstream-tier"]).toBe("archive");
    const refused = await rpc(KEYS.noArchive, "getShardBlockProof", old, 2);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain("ton-archive");
    expect(refused.text).not.toContain("not in db");
  });
});
