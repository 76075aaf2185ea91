import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_SHARED_LIMITS } from "../../src/config/defaults.js";
import { freePort } from "../../src/dev/free-port.js";
import { createLogger } from "../../src/log.js";
import { openSharedState, type SharedState } from "../../src/proxy/shared-state.js";
import { needServices, SHARED_REDIS_URL } from "../support/services.js";

// What a proxy says of the Redis its instances share (docs/deployment.md): a Redis that never answered
// is named at start, with why; the first connection is not "again".

const redis = await needServices("redis");

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
});
