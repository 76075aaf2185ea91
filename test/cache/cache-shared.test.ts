import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SharedAnswers } from "../../src/cache/shared-answers.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { needOwnServerBinaries, type OwnRedis, startOwnRedis } from "../support/own-servers.js";
import { type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// The shared layer of the answer cache (docs/cache.md, "Many instances"): two gateway instances with their
// own caches and one Redis (this suite's own, which it stops). An answer one fetched, the other serves
// without asking the node; with Redis stopped, both keep serving from the node and their own caches.

const own = needOwnServerBinaries("redis");

describe.skipIf(own.skip)(
  "final answers shared by two gateway instances through Redis (real Redis, real anvil)",
  () => {
    let node: Anvil;
    let recorder: RecordingNode;
    let redis: OwnRedis;
    let shared: SharedAnswers[];
    let a: RunningGateway;
    let b: RunningGateway;
    let restore: () => void;

    async function block(gw: RunningGateway, number: string, id = 1) {
      const answer = await gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id, method: "eth_getBlockByNumber", params: [number, false] }),
      });
      return {
        json: answer.json as { id: number; result: { hash: string } },
        cache: answer.headers["x-cache"],
      };
    }
    const reached = (number: string) =>
      recorder.calls.filter(
        (c) => c.method === "eth_getBlockByNumber" && JSON.stringify(c.params) === `["${number}",false]`,
      ).length;

    beforeAll(async () => {
      restore = resolveTestHosts();
      node = await startAnvil({ chainId: 1 });
      await node.rpc("anvil_mine", ["0x50"]);
      recorder = await startRecordingNode(node.url);
      redis = await startOwnRedis();
      shared = [0, 1].map(() => new SharedAnswers({ redis: redis.url, leaseMs: 100, fallbackShare: 1 }));
      const options = {
        upstreams: { eth: [{ url: recorder.url, name: "a" }] },
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
        cache: DEFAULT_CACHE,
      };
      a = await startGateway({ ...options, sharedAnswers: shared[0] as SharedAnswers });
      b = await startGateway({ ...options, sharedAnswers: shared[1] as SharedAnswers });
      await eventually(() => shared.every((s) => s.up), 5_000, "both instances connected to Redis");
      // both probers have read the finalized height (block 16 of 80)
      await eventually(
        () => recorder.calls.filter((c) => JSON.stringify(c.params) === '["finalized",false]').length >= 2,
        5_000,
        "finality probes",
      );
    });
    afterAll(async () => {
      await Promise.all([a?.close(), b?.close()]);
      for (const s of shared ?? []) s.close();
      await redis?.close();
      await recorder?.close();
      await node?.stop();
      restore?.();
    });

    it("an answer fetched by one instance is served by the other, compressed in Redis, with the caller's id", async () => {
      const first = await block(a, "0x3", 1);
      expect(first.cache).toBe("miss");
      // the answer is shared once it is compressed and stored: b asks only then (a b that asked before
      // would fetch it from the node itself, as it should)
      await eventually(() => (shared[0]?.counts.stored ?? 0) >= 1, 10_000, "a's answer stored in Redis");
      expect((await block(b, "0x3", 9)).cache).toBe("hit");
      const fromB = await block(b, "0x3", 10);
      expect(fromB.json).toEqual({ ...first.json, id: 10 });
      expect(reached("0x3")).toBe(1);
      expect(shared[1]?.counts.hit).toBeGreaterThanOrEqual(1);
    });

    it("a batch's final answers are shared both ways: kept by one instance's batch, served to the other's", async () => {
      const batch = async (gw: RunningGateway, numbers: string[], firstId: number) => {
        const answer = await gw.call("eth", `/${KEYS.all}`, {
          body: JSON.stringify(
            numbers.map((n, i) => ({
              jsonrpc: "2.0",
              id: firstId + i,
              method: "eth_getBlockByNumber",
              params: [n, false],
            })),
          ),
        });
        return {
          json: answer.json as { id: number; result: { number: string } }[],
          cache: answer.headers["x-cache"],
        };
      };
      const stored = shared[0]?.counts.stored ?? 0;
      const first = await batch(a, ["0x7", "0x8"], 1);
      expect(first.cache).toBe("miss");
      await eventually(() => (shared[0]?.counts.stored ?? 0) >= stored + 2, 2_000, "a's two answers stored");
      // b's batch finds both in Redis: no call of it reaches the node, each answer with b's caller's id
      const onB = await batch(b, ["0x8", "0x7"], 50);
      expect(onB.cache).toBe("hit");
      expect(onB.json.map((x) => [x.id, x.result.number])).toEqual([
        [50, "0x8"],
        [51, "0x7"],
      ]);
      expect([reached("0x7"), reached("0x8")]).toEqual([1, 1]);
    });

    it("a bug met past a shared hit ends that request at the error boundary, logged, and the process goes on", async () => {
      await block(a, "0x9", 1);
      await eventually(() => (shared[0]?.counts.stored ?? 0) >= 4, 10_000, "a's answer stored in Redis");
      const cache = b.gateway.upstreams.group("eth", "/")?.cache;
      if (cache === undefined) throw new Error("eth has no cache");
      const set = cache.set.bind(cache);
      // a defect inside the hit's promise callback: it threw where nothing caught it, and Node's default
      // for an unhandled rejection ends the process
      cache.set = () => {
        throw new TypeError("a defect in the cache's set");
      };
      try {
        const broken = await b.call("eth", `/${KEYS.all}`, {
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 3,
            method: "eth_getBlockByNumber",
            params: ["0x9", false],
          }),
        });
        expect(broken.status).toBe(500);
        expect(broken.text).toContain("INTERNAL");
        expect(
          b.logs.some((l) => l.includes('"unhandled"') && l.includes("a defect in the cache's set")),
        ).toBe(true);
      } finally {
        cache.set = set;
      }
      expect((await block(b, "0x9", 4)).json.result.hash).toMatch(/^0x/);
    });

    it("an answer read at the head is not shared", async () => {
      const latest = (
        await a.call("eth", `/${KEYS.all}`, {
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
        })
      ).headers["x-cache"];
      expect(latest).toBe("miss");
      const onB = await b.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
      });
      expect(onB.headers["x-cache"]).toBe("miss");
    });

    it("with Redis stopped, both keep serving, from the node and their own caches", async () => {
      await redis.stop();
      await eventually(() => shared.every((s) => !s.up), 5_000, "both instances see Redis away");
      for (const gw of [a, b]) {
        const miss = await block(gw, "0x5");
        expect(miss.json.result.hash).toMatch(/^0x[0-9a-f]{64}$/);
        expect((await block(gw, "0x5")).cache).toBe("hit");
      }
      expect(reached("0x5")).toBe(2);
      // and share again once it is back
      await redis.start();
      await eventually(() => shared.every((s) => s.up), 10_000, "both instances back on Redis");
      const stored = shared[0]?.counts.stored ?? 0;
      await block(a, "0x6");
      await eventually(() => (shared[0]?.counts.stored ?? 0) > stored, 2_000, "a's answer stored");
      expect((await block(b, "0x6")).cache, JSON.stringify(shared[1]?.counts)).toBe("hit");
      expect(reached("0x6")).toBe(1);
    });

    it("a chain that went back under its finalized blocks takes the shared answers of them too", async () => {
      const group = () => a.gateway.upstreams.group("eth", "/");
      const finalized = () => group()?.finalized ?? -1;
      const snapshot = await node.rpc<string>("evm_snapshot", []);
      const base = Number(await node.rpc<string>("eth_blockNumber", []));
      await node.rpc("anvil_mine", ["0x50", "0x1"]);
      const number = `0x${(base + 5).toString(16)}`;
      await eventually(() => finalized() >= base + 5, 3_000, "the new finalized height read");
      const stored = shared[0]?.counts.stored ?? 0;
      const before = (await block(a, number)).json.result.hash;
      await eventually(() => (shared[0]?.counts.stored ?? 0) > stored, 2_000, "the block stored in Redis");
      await node.rpc("evm_revert", [snapshot]);
      await eventually(() => finalized() < base + 5, 3_000, "the label's finality learned again");
      await node.rpc("anvil_mine", ["0x50", "0x2"]);
      const now = (await node.rpc<{ hash: string }>("eth_getBlockByNumber", [number, false])).hash;
      expect(now).not.toBe(before);
      const head = await node.rpc<string>("eth_blockNumber", []);
      await eventually(
        async () =>
          (
            (
              await a.call("eth", `/${KEYS.all}`, {
                body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}',
              })
            ).json as { result: string }
          ).result === head,
        3_000,
        "the head seen",
      );
      expect((await block(a, number)).json.result.hash).toBe(now);
    });
  },
);
