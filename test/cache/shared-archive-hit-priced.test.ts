import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SharedAnswers } from "../../src/cache/shared-answers.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type ArchivePair, startArchivePair } from "../support/archive-pair.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";

// docs/compute-units.md: "a call an archive node answers costs the interface's archive factor times as
// much", and an answer from the cache costs the plan's cachedShare "of that"; docs/cache.md keeps an
// archive node's answer with its tier. Two instances share final answers through Redis: an archive node's
// answer to an old read, which one fetched, was served by the other from the shared layer at a full node's
// price (and counted under `eth`, not `eth-archive`), though its X-Upstream-Tier said archive, and the same
// instance's next hit (from its own cache) cost the archive's price.

const REDIS = "redis://127.0.0.1:6379/13";
const ACCOUNT = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

describe("an archive node's answer served from the shared layer (real anvils, Redis)", () => {
  let pair: ArchivePair;
  let shared: SharedAnswers[];
  let a: RunningGateway;
  let b: RunningGateway;

  beforeAll(async () => {
    const flush = new Redis(REDIS);
    await flush.flushdb();
    flush.disconnect();
    pair = await startArchivePair(300);
    shared = [0, 1].map(() => new SharedAnswers({ redis: REDIS, leaseMs: 100, fallbackShare: 1 }));
    const options = {
      upstreams: pair.upstreams,
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: DEFAULT_CACHE,
    };
    a = await startGateway({ ...options, sharedAnswers: shared[0] as SharedAnswers });
    b = await startGateway({ ...options, sharedAnswers: shared[1] as SharedAnswers });
    await Promise.all([everyNodeInRotation(a), everyNodeInRotation(b)]);
    await eventually(() => (shared as SharedAnswers[]).every((s) => s.up), 5_000, "both on Redis");
    // the finalized height (anvil: 64 below the head) is known to both, so block 1 is final
    await eventually(
      async () =>
        (await a.metric("gateway_upstream_head", { label: "eth" })) === 300 &&
        (await b.metric("gateway_upstream_head", { label: "eth" })) === 300,
      5_000,
      "heads",
    );
    // by each instance's own prober: a node's answer to one instance's probe is no word of the other's, and
    // an instance that does not hold block 1 final yet neither reads nor shares it (the first clean-clone
    // runs read a miss on b under load)
    const finalOn = (gw: RunningGateway) =>
      gw.gateway.upstreams
        .groups()
        .filter((g) => g.label === "eth")
        .every((g) => g.finalized >= 1);
    await eventually(() => finalOn(a) && finalOn(b), 10_000, "finality probes of both instances");
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    for (const s of shared ?? []) s.close();
    await pair?.stop();
  });

  it("costs the archive's price there too, as a hit from the instance's own cache does", async () => {
    const balance = (gw: RunningGateway, id: number, block: string) =>
      gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_getBalance", [ACCOUNT, block], id) });
    // an instance shares nothing before Redis has said how much memory it has (shared-answers.ts): other
    // old reads until one is stored
    let warm = 1;
    await eventually(
      async () => {
        warm++;
        await a.call("eth", `/${KEYS.all}`, {
          body: rpcBody("eth_getBalance", [ACCOUNT, `0x${warm.toString(16)}`]),
        });
        return (shared[0]?.counts.stored ?? 0) >= 1;
      },
      10_000,
      "an answer stored in Redis",
    );
    const units = (gw: RunningGateway, label: string) => gw.metric("gateway_compute_units_total", { label });
    // a lookup waits at most 50 ms for Redis before the call goes to a node (shared-answers.ts): on a loaded
    // host, b may ask its node instead. Each try reads a block neither instance has read
    let block = "0x1";
    let before = { eth: 0, archive: 0 };
    let fromShared: Awaited<ReturnType<typeof balance>> | undefined;
    for (let tryAt = 0; tryAt < 5 && fromShared?.headers["x-cache"] !== "hit"; tryAt++) {
      block = `0x${(200 + tryAt).toString(16)}`;
      const stored = shared[0]?.counts.stored ?? 0;
      const fetched = await balance(a, 1, block);
      expect([fetched.headers["x-cache"], fetched.headers["x-upstream-tier"]]).toEqual(["miss", "archive"]);
      // eth_getBalance's 20, twice over as the archive's
      expect(fetched.headers["x-compute-units"]).toBe("40");
      await eventually(() => (shared[0]?.counts.stored ?? 0) > stored, 10_000, "a's answer stored in Redis");
      before = { eth: await units(b, "eth"), archive: await units(b, "eth-archive") };
      fromShared = await balance(b, 2, block);
    }
    expect([fromShared?.headers["x-cache"], fromShared?.headers["x-upstream-tier"]]).toEqual([
      "hit",
      "archive",
    ]);
    const fromOwn = await balance(b, 3, block);
    expect([fromOwn.headers["x-cache"], fromOwn.headers["x-upstream-tier"]]).toEqual(["hit", "archive"]);
    expect(fromOwn.headers["x-compute-units"]).toBe("40");
    expect(fromShared?.headers["x-compute-units"]).toBe("40");
    // both counted where an archive node's answer is, at its price
    expect(await units(b, "eth-archive")).toBe(before.archive + 80);
    expect(await units(b, "eth")).toBe(before.eth);
  });
});
