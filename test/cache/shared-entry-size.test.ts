import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SharedAnswers } from "../../src/cache/shared-answers.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { needOwnServerBinaries, type OwnRedis, startOwnRedis } from "../support/own-servers.js";
import { type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// docs/cache.md, "Memory" and "Many instances": `maxEntryBytes` is the largest answer the cache keeps. A
// final answer past it was kept by no instance's own cache, yet deflated and stored in Redis for 24 hours,
// where the quotas live: every other instance then read it from Redis at each call (50 ms at most before it
// asks a node, and an inflate of it), kept it no more than the first did, and the operator's bound on an
// entry held nowhere but in memory. Such an answer is now shared no more than it is kept.

const own = needOwnServerBinaries("redis");

describe.skipIf(own.skip)(
  "an answer larger than maxEntryBytes, with a shared layer (real Redis, real anvil)",
  () => {
    let node: Anvil;
    let recorder: RecordingNode;
    let redis: OwnRedis;
    let shared: SharedAnswers[];
    let a: RunningGateway;
    let b: RunningGateway;
    let restore: () => void;

    async function ask(gw: RunningGateway, method: string, params: unknown[]) {
      const answer = await gw.call("eth", `/${KEYS.all}`, { body: rpcBody(method, params) });
      return { json: answer.json as { result: unknown }, cache: answer.headers["x-cache"] };
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
        // eth_chainId's answer fits, a block's (some 1.5 KB) does not
        cache: { ...DEFAULT_CACHE, maxEntryBytes: 200 },
      };
      a = await startGateway({ ...options, sharedAnswers: shared[0] as SharedAnswers });
      b = await startGateway({ ...options, sharedAnswers: shared[1] as SharedAnswers });
      await eventually(() => shared.every((s) => s.up), 5_000, "both instances connected to Redis");
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

    it("is neither kept nor stored in Redis: another instance asks the node for it, as the first did", async () => {
      // a final block, larger than an entry may be, then a small final answer after it
      const block = await ask(a, "eth_getBlockByNumber", ["0x3", false]);
      expect(block.cache).toBe("miss");
      expect(JSON.stringify(block.json.result).length).toBeGreaterThan(200);
      expect((await ask(a, "eth_getBlockByNumber", ["0x3", false])).cache).toBe("miss");
      expect((await ask(a, "eth_chainId", [])).cache).toBe("miss");
      // the small answer, stored after the block was (or was not) sent on to Redis
      await eventually(
        () => (shared[0]?.counts.stored ?? 0) >= 1,
        10_000,
        "a's small answer stored in Redis",
      );
      expect((await ask(b, "eth_chainId", [])).cache).toBe("hit");
      // the block: from the node, on every instance, never from Redis
      const onB = await ask(b, "eth_getBlockByNumber", ["0x3", false]);
      expect(onB.cache).toBe("miss");
      expect(onB.json.result).toEqual(block.json.result);
      expect(reached("0x3")).toBe(3);
      expect(shared[0]?.counts.stored).toBe(1);
    });
  },
);
