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

// toncenter's lookupBlock by `lt` or `unixtime` (tonlib's blocks.lookupBlock, mode 2 or 4) names a block by
// a logical time or a time, which the masterchain's seqno (the head) does not count. A liteserver finds it
// in its archive slices (ton-blockchain/ton validator/db/archive-manager.cpp get_block_by_lt,
// get_block_by_unix_time; archive-slice.cpp get_block_common): one after its last block it answers
// "ltdb: block not found" (a node behind, for the block a caller just saw from the node ahead), one before
// the first block it keeps "lt not in db" / "ts not in db" (a full liteserver, for an old one); tonlib's
// LITE_SERVER_NOTREADY, which ton-http-api answers at HTTP 500 as {"ok": false, "error", "code"}.
// What a user saw: a caller who read the head from the node ahead and looked up its block by lt or time
// got "ltdb: block not found" from the node behind about half the time.

const H = 50_000_000;
/** How long a full liteserver keeps its blocks here: older ones it answers "not in db". */
const KEPT = 1000;
const ltOf = (seqno: number) => seqno * 1_000_000;
const timeOf = (seqno: number) => 1_700_000_000 + seqno * 5;
const SHARD = "-9223372036854775808";

const lookup = (keeps: boolean): TypicalAnswer => ({
  result: ({ height }, params) => {
    const p = params as { lt?: unknown; unixtime?: unknown; seqno?: unknown };
    const seqno =
      p.lt !== undefined
        ? Math.floor(Number(p.lt) / 1_000_000)
        : p.unixtime !== undefined
          ? Math.floor((Number(p.unixtime) - 1_700_000_000) / 5)
          : Number(p.seqno);
    const by = p.lt !== undefined ? "lt" : p.unixtime !== undefined ? "ts" : "seqno";
    if (seqno > height) throw new NodeRejection(500, "LITE_SERVER_NOTREADY: ltdb: block not found");
    if (!keeps && seqno < height - KEPT)
      throw new NodeRejection(500, `LITE_SERVER_NOTREADY: ${by} not in db`);
    return { "@type": "ton.blockIdExt", workchain: -1, shard: SHARD, seqno, root_hash: "r", file_hash: "f" };
  },
});

describe("ton: lookupBlock by lt or unixtime, two nodes one block apart and ton-archive", () => {
  let nodes: LoopbackNode[];
  let archive: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    const ton = endpointsByLabel.get("ton") as Endpoint;
    const tonArchive = endpointsByLabel.get("ton-archive") as Endpoint;
    nodes = await Promise.all(
      [H + 1, H].map((h) =>
        startLoopbackNode(
          softwareNode(ton, nodeState(ton, h), [""], { answers: { lookupBlock: lookup(false) } }),
        ),
      ),
    );
    archive = await startLoopbackNode(
      softwareNode(tonArchive, nodeState(tonArchive, H + 1), [""], {
        answers: { lookupBlock: lookup(true) },
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

  for (const [by, at] of [
    ["lt", (seqno: number) => ({ lt: String(ltOf(seqno)) })],
    ["unixtime", (seqno: number) => ({ unixtime: timeOf(seqno) })],
  ] as const) {
    it(`by ${by}, after getMasterchainInfo: the head block, never the node behind's "block not found"`, async () => {
      const answers: unknown[] = [];
      for (let i = 0; i < 10; i++) {
        const head = (await rpc(KEYS.noArchive, "getMasterchainInfo", {}, i)).json as {
          result: { last: { seqno: number } };
        };
        expect(head.result.last.seqno).toBe(H + 1);
        const got = await rpc(
          KEYS.noArchive,
          "lookupBlock",
          { workchain: -1, shard: SHARD, ...at(H + 1) },
          i,
        );
        answers.push((got.json as { result?: { seqno?: number }; error?: string }).result?.seqno ?? got.text);
      }
      expect(answers).toEqual(answers.map(() => H + 1));
    });

    it(`by ${by}, older than a full liteserver keeps: ton-archive's answer, or ARCHIVE_REQUIRED`, async () => {
      const old = { workchain: -1, shard: SHARD, ...at(H - 5 * KEPT) };
      const served = await rpc(KEYS.all, "lookupBlock", old, 1);
      expect(served.json).toMatchObject({ ok: true, result: { seqno: H - 5 * KEPT } });
      expect(served.headers["x-upstream-tier"]).toBe("archive");
      const refused = await rpc(KEYS.noArchive, "lookupBlock", old, 2);
      expect(refused.status).toBe(403);
      expect(refused.text).toContain("ton-archive");
      expect(refused.text).not.toContain("not in db");
    });
  }
});
