import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// What a user could see through toncenter's REST shapes (GET /api/v2/getBlockHeader?…, POST
// /api/v2/runGetMethod with its params as the body): an old seqno's read answered with the liteserver's raw
// "seqno not in db" instead of ton-archive's answer (an archive key) or ARCHIVE_REQUIRED (any other key).
// The REST shape becomes the JSON-RPC call, which goes by tier as the same call over /jsonRPC does.
const WINDOW = 1_000;
const HEIGHT = 5_000_000;
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;
const blockHeader = (pruned: boolean): TypicalAnswer => ({
  result: (_state, params) => ({
    "@type": "blocks.header",
    id: { workchain: -1, seqno: Number((params as { seqno?: unknown }).seqno) },
  }),
  ...(pruned
    ? {
        missing: (state: NodeState, params?: unknown) =>
          Number((params as { seqno?: unknown }).seqno) < state.height - WINDOW,
      }
    : {}),
});

const getMethod = (pruned: boolean): TypicalAnswer => ({
  result: () => ({
    "@type": "smc.runResult",
    gas_used: 100,
    stack: [["num", pruned ? "0x1" : "0x2a"]],
    exit_code: 0,
  }),
  ...(pruned
    ? {
        missing: (state: NodeState, params?: unknown) => {
          const seqno = (params as { seqno?: unknown }).seqno;
          return seqno !== undefined && Number(seqno) < state.height - WINDOW;
        },
      }
    : {}),
});

describe("TON REST shape (GET /api/v2/getBlockHeader?…) at an old seqno", () => {
  const nodes = new Map<string, LoopbackNode>();
  let gw: RunningGateway;
  beforeAll(async () => {
    for (const label of ["ton", "ton-archive"]) {
      const e = endpoint(label);
      nodes.set(
        label,
        await startLoopbackNode(
          softwareNode(e, nodeState(e, HEIGHT), [""], {
            answers: {
              getBlockHeader: blockHeader(label === "ton"),
              runGetMethod: getMethod(label === "ton"),
            },
          }),
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
      "heads",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...nodes.values()].map((node) => node.close()));
  });
  const get = (key: string, seqno: number) =>
    gw.call("ton", `/${key}/api/v2/getBlockHeader?workchain=-1&shard=-9223372036854775808&seqno=${seqno}`, {
      method: "GET",
    });

  it("archive key: ton-archive answers", async () => {
    const r = await get(KEYS.all, HEIGHT - 5_000);
    expect(r.text).not.toContain("not in db");
    expect(r.json).toMatchObject({ ok: true });
  });
  it("no archive key: ARCHIVE_REQUIRED", async () => {
    const r = await get(KEYS.noArchive, HEIGHT - 5_000);
    expect(r.text).not.toContain("not in db");
    expect(r.status).toBe(403);
  });
  it("far older, no archive key: ARCHIVE_REQUIRED", async () => {
    const r = await get(KEYS.noArchive, HEIGHT - 500_000);
    expect(r.status).toBe(403);
  });

  it("POST runGetMethod with an old seqno in its body: ton-archive answers an archive key, ARCHIVE_REQUIRED the rest", async () => {
    const post = (key: string) =>
      gw.call("ton", `/${key}/api/v2/runGetMethod`, {
        body: JSON.stringify({
          address: "EQCD39VS5jcptHL8vMjEXrzGaRcCVYto7HUn4bpAOg8xqB2N",
          method: "seqno",
          stack: [],
          seqno: HEIGHT - 5_000,
        }),
        headers: { "content-type": "application/json" },
      });
    const a = await post(KEYS.all);
    expect(a.json).toMatchObject({ ok: true, result: { stack: [["num", "0x2a"]] } });
    expect(a.headers["x-upstream-tier"]).toBe("archive");
    const b = await post(KEYS.noArchive);
    expect(b.text).not.toContain("not in db");
    expect(b.status).toBe(403);
  });
});
