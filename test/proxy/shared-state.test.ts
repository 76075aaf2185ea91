import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_SHARED_LIMITS } from "../../src/config/defaults.js";
import { freePort } from "../../src/dev/free-port.js";
import { createLogger } from "../../src/log.js";
import { openSharedState, type SharedState } from "../../src/proxy/shared-state.js";
import { needOwnServerBinaries, startOwnRedis } from "../support/own-servers.js";
import { needServices, SHARED_REDIS_URL } from "../support/services.js";

// What a proxy says of the Redis its instances share (docs/deployment.md): a Redis that never answered
// is named at start, with why; the first connection is not "again".

const redis = await needServices("redis");
const ownRedis = needOwnServerBinaries("redis");

describe("the shared state's lines about Redis", () => {
  let state: SharedState | undefined;
  afterEach(async () => {
    await state?.close();
    state = undefined;
  });

  it("says at start that Redis did not answer, and why, when it never did", async () => {
    const lines: string[] = [];
    const port = await freePort();
    state = await openSharedState(
      { ...DEFAULT_CONFIG, sharedLimits: { ...DEFAULT_SHARED_LIMITS, redis: `redis://127.0.0.1:${port}` } },
      createLogger("info", (line) => lines.push(line)),
      () => {},
      300,
    );
    const warning = lines.find((l) => l.includes("Redis did not answer at start"));
    expect(warning).toBeDefined();
    expect(JSON.parse(warning as string)).toMatchObject({ level: "warn", waitedMs: 300 });
    expect(JSON.parse(warning as string).reason).toContain("ECONNREFUSED");
  });

  it.skipIf(redis.skip)("says a first connection is made, not made again", async () => {
    const lines: string[] = [];
    state = await openSharedState(
      { ...DEFAULT_CONFIG, sharedLimits: { ...DEFAULT_SHARED_LIMITS, redis: SHARED_REDIS_URL } },
      createLogger("info", (line) => lines.push(line)),
      () => {},
      3_000,
    );
    expect(lines.some((l) => l.includes("Redis did not answer"))).toBe(false);
    const reachable = lines.filter((l) => l.includes("Redis reachable"));
    expect(reachable).toHaveLength(2);
    for (const line of reachable) expect(line).not.toContain("again");
  });

  // Deployments that share one Redis keep apart by the database index in their URL (docs/deployment.md).
  // A Redis with fewer databases refuses the SELECT, and ioredis went on in database 0 all the same, where
  // another deployment's rates, quotas and heads are: the proxy said "Redis reachable, limits shared".
  it.skipIf(ownRedis.skip)(
    "names a database the Redis does not have, and shares nothing through another",
    async () => {
      const own = await startOwnRedis();
      const admin = new Redis(own.url);
      try {
        const [, databases] = (await admin.config("GET", "databases")) as [string, string];
        const lines: string[] = [];
        state = await openSharedState(
          {
            ...DEFAULT_CONFIG,
            sharedLimits: { ...DEFAULT_SHARED_LIMITS, redis: `${own.url}/${Number(databases)}` },
          },
          createLogger("info", (line) => lines.push(line)),
          () => {},
          1_000,
        );
        expect(state.limiter?.shared).toBe(false);
        const warning = lines.find((l) => l.includes("Redis did not answer at start"));
        expect(JSON.parse(warning as string).reason).toContain("DB index is out of range");
        expect(lines.some((l) => l.includes("Redis reachable"))).toBe(false);
        // a key's calls are counted here, not in database 0
        state.limiter?.take("FNownKey", { perSecond: 10, burst: 10 });
        expect(await admin.dbsize()).toBe(0);
      } finally {
        admin.disconnect();
        await state?.close();
        state = undefined;
        await own.close();
      }
    },
    30_000,
  );
});
