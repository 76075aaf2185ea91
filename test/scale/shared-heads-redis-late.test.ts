import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { SharedHeads } from "../../src/answers/shared-heads.js";
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { UpstreamGroup } from "../../src/upstream/group.js";
import { UpstreamTable } from "../../src/upstream/upstreams.js";
import { eventually } from "../support/eventually.js";
import { needOwnServerBinaries, type OwnRedis, startOwnRedis } from "../support/own-servers.js";

// A proxy started while the fleet's Redis is down serves alone until Redis answers, then shares again
// (docs/deployment.md): its served heads too, so that a caller whose calls land on it and on another
// proxy sees a rising head. This suite's own Redis (it starts it late).

const binaries = needOwnServerBinaries("redis");
const H = 40_000_000;

/** An algo group of a gateway that is not started: what a deployment's SharedHeads would be given. */
function groupOf(name: string) {
  const table = new UpstreamTable(
    {
      upstreams: { algo: [{ url: "http://127.0.0.1:9", name }] },
      limits: DEFAULT_LIMITS,
      health: DEFAULT_HEALTH,
    },
    endpointsByLabel,
    () => ({}) as never,
    () => {},
  );
  return table.group("algo", "/") as UpstreamGroup;
}

describe.skipIf(binaries.skip)("shared heads of a proxy started while Redis is down", () => {
  let redis: OwnRedis;
  const heads: SharedHeads[] = [];

  beforeAll(async () => {
    redis = await startOwnRedis();
    await redis.stop();
  }, 30_000);
  afterAll(async () => {
    await Promise.all(heads.map((h) => h.close()));
    await redis?.close();
  });

  it("hears the other proxies' heads once Redis is back", async () => {
    const late = new SharedHeads({ redis: redis.url, leaseMs: 100, fallbackShare: 1 });
    heads.push(late);
    const lateGroup = groupOf("late");
    late.attach([lateGroup]);
    // its first connection attempt has failed: Redis is down as it starts
    const probe = new Redis(redis.url, { lazyConnect: true, retryStrategy: () => null });
    probe.on("error", () => {});
    await expect(probe.connect()).rejects.toThrow();
    probe.disconnect();

    await redis.start();
    const admin = new Redis(redis.url);
    try {
      const clients = async () =>
        String(await admin.client("LIST"))
          .split("\n")
          .filter((line: string) => line !== "").length;
      // its connections are back: the one it stores heads with, and the one it listens on
      await eventually(async () => (await clients()) >= 3, 15_000, "its two connections back");
      const other = new SharedHeads({ redis: redis.url, leaseMs: 100, fallbackShare: 1 });
      heads.push(other);
      const otherGroup = groupOf("other");
      other.attach([otherGroup]);
      await eventually(async () => (await clients()) >= 5, 5_000, "the other proxy connected");
      await eventually(
        async () => {
          const stored = await admin.pubsub("NUMSUB", "gateway:heads:0");
          return (stored[1] as number) >= 1;
        },
        5_000,
        "the other proxy listening",
      );
      // the other proxy serves a higher head: published to every proxy listening
      otherGroup.served.raise(H + 5);
      await eventually(
        async () => Number(await admin.get("gateway:head:algo")) === H + 5,
        5_000,
        "the head stored",
      );
      await eventually(() => lateGroup.served.height === H + 5, 5_000, "the late proxy's served head");
      expect(((await admin.pubsub("NUMSUB", "gateway:heads:0"))[1] as number) >= 2).toBe(true);
    } finally {
      admin.disconnect();
    }
  }, 60_000);
});
