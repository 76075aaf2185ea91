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

// Archive routing for Substrate and NEAR (docs/upstreams.md, "Archive"), through loopback nodes that answer
// as their software does: a pruned Substrate node's 4003 "State already discarded for 0x…", nearcore's
// HANDLER_ERROR whose cause is GARBAGE_COLLECTED_BLOCK. Each full label's node keeps the state of its last
// WINDOW blocks; its archive label's node keeps everything.

const WINDOW = 1_000;
const HEIGHT = 5_000_000;
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;

/** A Substrate block hash that says its height, as the loopback Substrate node writes them (chain-answers.ts). */
const substrateHash = (height: number) => `0x${(height + 0xabc0_0000).toString(16).padStart(64, "0")}`;
const heightOfSubstrateHash = (hash: unknown) => Number.parseInt(String(hash).slice(2), 16) - 0xabc0_0000;

const storage = (pruned: boolean): TypicalAnswer => ({
  result: () => "0x2a00000000000000",
  ...(pruned
    ? {
        missing: (state: NodeState, params?: unknown) =>
          heightOfSubstrateHash((params as unknown[])[1]) < state.height - WINDOW,
      }
    : {}),
});
const query = (pruned: boolean): TypicalAnswer => ({
  result: (state, params) => ({
    amount: "1000000000000000000000000",
    locked: "0",
    code_hash: "11111111111111111111111111111111",
    storage_usage: 182,
    storage_paid_at: 0,
    block_height: (params as { block_id?: number }).block_id ?? state.height,
    block_hash: "5mzY6JkVd2zK8T9HxR3o4bM5fN7qW2eY1uP9aS3dF6gH",
  }),
  ...(pruned
    ? {
        missing: (state: NodeState, params?: unknown) => {
          const id = (params as { block_id?: unknown }).block_id;
          return typeof id === "number" && id < state.height - WINDOW;
        },
      }
    : {}),
});

const blockHeader = (pruned: boolean): TypicalAnswer => ({
  result: (_state, params) => ({
    "@type": "blocks.header",
    id: {
      "@type": "ton.blockIdExt",
      workchain: -1,
      shard: "-9223372036854775808",
      seqno: Number((params as { seqno?: unknown }).seqno),
    },
  }),
  ...(pruned
    ? {
        missing: (state: NodeState, params?: unknown) =>
          Number((params as { seqno?: unknown }).seqno) < state.height - WINDOW,
      }
    : {}),
});

describe("archive routing for Substrate, NEAR and TON (loopback nodes of their software)", () => {
  const nodes = new Map<string, LoopbackNode>();
  let gw: RunningGateway;
  const usage: { calls: number; errors: number; units: number; detail: unknown }[] = [];

  const calls = (label: string, method: string) =>
    (nodes.get(label)?.requests ?? []).filter((r) => r.body.includes(`"method":"${method}"`)).length;
  const rpc = (label: string, key: string, method: string, params: unknown) =>
    gw.call(label, `/${key}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method, params }),
      headers: { "content-type": "application/json" },
    });

  beforeAll(async () => {
    const answers = (pruned: boolean) => ({
      state_getStorage: storage(pruned),
      state_getStorageAt: storage(pruned),
      query: query(pruned),
      EXPERIMENTAL_view_account: query(pruned),
      getBlockHeader: blockHeader(pruned),
    });
    for (const label of ["dot", "dot-archive", "near", "near-archive", "ton", "ton-archive"]) {
      const e = endpoint(label);
      const pruned = !label.endsWith("-archive");
      nodes.set(
        label,
        await startLoopbackNode(softwareNode(e, nodeState(e, HEIGHT), [""], { answers: answers(pruned) })),
      );
    }
    gw = await startGateway({
      upstreams: Object.fromEntries(
        [...nodes].map(([label, node]) => [label, [{ url: node.url, name: label }]]),
      ),
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      usage: {
        record: (_key, _label, calls, errors, units, detail) => usage.push({ calls, errors, units, detail }),
      },
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

  describe("Substrate: state at a block's hash", () => {
    const key = "0x26aa394eea5630e07c48ae0c9558cef7b99d880ec681799c0cf30e8886371da9";

    it("state a full node discarded is read from dot-archive once more, for an archive key", async () => {
      const old = substrateHash(HEIGHT - 5_000);
      const [full, archive] = [calls("dot", "state_getStorage"), calls("dot-archive", "state_getStorage")];
      const r = await rpc("dot", KEYS.all, "state_getStorage", [key, old]);
      expect(r.json).toEqual({ jsonrpc: "2.0", id: 9, result: "0x2a00000000000000" });
      expect(r.headers["x-upstream-tier"]).toBe("archive");
      expect([calls("dot", "state_getStorage"), calls("dot-archive", "state_getStorage")]).toEqual([
        full + 1,
        archive + 1,
      ]);
    });

    it("state the full node keeps is its answer, and a key without archive access gets ARCHIVE_REQUIRED for the rest", async () => {
      const recent = await rpc("dot", KEYS.noArchive, "state_getStorage", [key, substrateHash(HEIGHT - 10)]);
      expect(recent.json).toMatchObject({ result: "0x2a00000000000000" });
      expect(recent.headers["x-upstream-tier"]).toBe("full");
      const archive = calls("dot-archive", "state_getStorage");
      const old = await rpc("dot", KEYS.noArchive, "state_getStorage", [key, substrateHash(HEIGHT - 5_000)]);
      expect(old.status).toBe(403);
      expect(old.json).toMatchObject({
        id: 9,
        error: { code: -32045, data: { archiveLabel: "dot-archive" } },
      });
      expect(old.text).not.toContain("State already discarded");
      // named by hash: the block may be old, or no block of this network at all (a typo, another's hash)
      expect(old.json).toMatchObject({
        error: { data: { reason: expect.stringContaining("or not be a block of this network at all") } },
      });
      expect(calls("dot-archive", "state_getStorage")).toBe(archive);
    });

    it("a batch's call answered ARCHIVE_REQUIRED is a refusal in the key's usage, not a call of its method", async () => {
      const records = usage.length;
      const r = await gw.call("dot", `/${KEYS.noArchive}`, {
        body: JSON.stringify([
          { jsonrpc: "2.0", id: 1, method: "state_getStorage", params: [key, substrateHash(HEIGHT - 5_000)] },
          { jsonrpc: "2.0", id: 2, method: "state_getStorage", params: [key, substrateHash(HEIGHT - 5)] },
        ]),
        headers: { "content-type": "application/json" },
      });
      expect(r.json).toMatchObject([
        { id: 1, error: { code: -32045 } },
        { id: 2, result: "0x2a00000000000000" },
      ]);
      await eventually(() => usage.length > records, 2_000, "the usage recorded");
      expect(usage.at(-1)).toMatchObject({
        calls: 2,
        errors: 1,
        units: 20,
        detail: { parts: [{ method: "state_getStorage", calls: 1 }], refusedCodes: ["ARCHIVE_REQUIRED"] },
      });
    });

    it("a batch's call the archive nodes could not serve is a refusal under its own code in the key's usage", async () => {
      const archiveNode = gw.gateway.upstreams.group("dot-archive", "/")?.members[0];
      archiveNode?.health.cordon(true);
      try {
        const records = usage.length;
        const r = await gw.call("dot", `/${KEYS.all}`, {
          body: JSON.stringify([
            {
              jsonrpc: "2.0",
              id: 1,
              method: "state_getStorage",
              params: [key, substrateHash(HEIGHT - 5_000)],
            },
            { jsonrpc: "2.0", id: 2, method: "state_getStorage", params: [key, substrateHash(HEIGHT - 5)] },
          ]),
          headers: { "content-type": "application/json" },
        });
        expect(r.json).toMatchObject([
          { id: 1, error: { data: { code: "NO_UPSTREAM" } } },
          { id: 2, result: "0x2a00000000000000" },
        ]);
        await eventually(() => usage.length > records, 2_000, "the usage recorded");
        expect(usage.at(-1)).toMatchObject({
          calls: 2,
          errors: 1,
          detail: { refusedCodes: ["NO_UPSTREAM"] },
        });
      } finally {
        archiveNode?.health.cordon(false);
      }
    });

    it("an alias of a state call (state_getStorageAt) is routed as the call is", async () => {
      const old = substrateHash(HEIGHT - 5_000);
      const r = await rpc("dot", KEYS.all, "state_getStorageAt", [key, old]);
      expect(r.json).toEqual({ jsonrpc: "2.0", id: 9, result: "0x2a00000000000000" });
      expect(r.headers["x-upstream-tier"]).toBe("archive");
      const refused = await rpc("dot", KEYS.noArchive, "state_getStorageAt", [key, old]);
      expect(refused.json).toMatchObject({ error: { code: -32045, data: { archiveLabel: "dot-archive" } } });
    });
  });

  describe("NEAR: query by block_id and by finality", () => {
    const account = { request_type: "view_account", account_id: "gateway.near" };

    it("a block older than a non-archival node keeps goes to near-archive at once", async () => {
      const [full, archive] = [calls("near", "query"), calls("near-archive", "query")];
      const r = await rpc("near", KEYS.all, "query", { ...account, block_id: HEIGHT - 300_000 });
      expect(r.json).toMatchObject({ id: 9, result: { block_height: HEIGHT - 300_000 } });
      expect(r.headers["x-upstream-tier"]).toBe("archive");
      expect([calls("near", "query"), calls("near-archive", "query")]).toEqual([full, archive + 1]);
    });

    it("one the node garbage-collected goes there once more; a key without archive access gets ARCHIVE_REQUIRED", async () => {
      const gc = HEIGHT - 5_000;
      const r = await rpc("near", KEYS.all, "query", { ...account, block_id: gc });
      expect(r.json).toMatchObject({ result: { block_height: gc } });
      expect(r.headers["x-upstream-tier"]).toBe("archive");
      const refused = await rpc("near", KEYS.noArchive, "query", { ...account, block_id: gc });
      expect(refused.json).toMatchObject({ error: { code: -32045, data: { archiveLabel: "near-archive" } } });
      expect(refused.text).not.toContain("GARBAGE_COLLECTED_BLOCK");
      expect(refused.json).toMatchObject({
        error: { data: { reason: expect.stringContaining("only archive nodes keep") } },
      });
    });

    it("query's request types as methods of their own (EXPERIMENTAL_view_account) are routed as query is", async () => {
      const { request_type: _, ...viewAccount } = account;
      const archive = calls("near-archive", "EXPERIMENTAL_view_account");
      const r = await rpc("near", KEYS.all, "EXPERIMENTAL_view_account", {
        ...viewAccount,
        block_id: HEIGHT - 300_000,
      });
      expect(r.json).toMatchObject({ id: 9, result: { block_height: HEIGHT - 300_000 } });
      expect(r.headers["x-upstream-tier"]).toBe("archive");
      expect(calls("near-archive", "EXPERIMENTAL_view_account")).toBe(archive + 1);
      const refused = await rpc("near", KEYS.noArchive, "EXPERIMENTAL_view_account", {
        ...viewAccount,
        block_id: HEIGHT - 5_000,
      });
      expect(refused.json).toMatchObject({ error: { code: -32045, data: { archiveLabel: "near-archive" } } });
      expect(refused.text).not.toContain("GARBAGE_COLLECTED_BLOCK");
    });

    it("a read by finality stays on the full node", async () => {
      const archive = calls("near-archive", "query");
      const r = await rpc("near", KEYS.noArchive, "query", { ...account, finality: "final" });
      expect(r.json).toMatchObject({ result: { block_height: HEIGHT } });
      expect(calls("near-archive", "query")).toBe(archive);
    });
  });

  // a liteserver without the archive keeps its last days of blocks: an older one it answers at HTTP 500
  // "LITE_SERVER_NOTREADY: … seqno not in db", which is a tonlib error the node answers, not a node in trouble
  describe("TON: a masterchain block by its seqno", () => {
    const header = (key: string, seqno: number) =>
      rpc("ton", key, "getBlockHeader", { workchain: -1, shard: "-9223372036854775808", seqno });

    it("a block the full liteserver no longer keeps is read from ton-archive once more; a far older one at once", async () => {
      const [full, archive] = [calls("ton", "getBlockHeader"), calls("ton-archive", "getBlockHeader")];
      const old = await header(KEYS.all, HEIGHT - 5_000);
      expect(old.json).toMatchObject({ ok: true, result: { id: { seqno: HEIGHT - 5_000 } } });
      expect(old.headers["x-upstream-tier"]).toBe("archive");
      expect([calls("ton", "getBlockHeader"), calls("ton-archive", "getBlockHeader")]).toEqual([
        full + 1,
        archive + 1,
      ]);
      const older = await header(KEYS.all, HEIGHT - 1_000_000);
      expect(older.headers["x-upstream-tier"]).toBe("archive");
      expect(calls("ton", "getBlockHeader")).toBe(full + 1);
      // the full node stays in rotation: its "seqno not in db" was its answer
      expect(gw.gateway.upstreams.group("ton", "/")?.members[0]?.health.inRotation).toBe(true);
    });

    it("a recent block is the full node's answer, and a key without archive access gets ARCHIVE_REQUIRED for an old one", async () => {
      const recent = await header(KEYS.noArchive, HEIGHT - 10);
      expect(recent.headers["x-upstream-tier"]).toBe("full");
      const refused = await header(KEYS.noArchive, HEIGHT - 5_000);
      expect(refused.status).toBe(403);
      expect(refused.text).toContain("ton-archive");
      expect(refused.text).not.toContain("not in db");
    });
  });
});
