import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SharedTokenBuckets } from "../../src/limits/shared-buckets.js";
import { createLogger } from "../../src/log.js";
import { eventually } from "../support/eventually.js";
import { needOwnServerBinaries } from "../support/own-servers.js";
import { type SilenceableRedis, startSilenceableRedis } from "../support/silent-redis.js";

// docs/deployment.md, "When something fails": a Redis unreachable is logged `shared rate limits: Redis
// unreachable, each instance limits alone` with its `reason`, the client's last error. When the path to
// Redis goes silent (no FIN, no RST: test/support/tcp-forwarder.ts), a lease times out, a PING gets no
// answer within 1 s, and the proxy drops the connection itself (limits/redis-options.ts
// reconnectWhenSilent). That line's reason read "Redis closed the connection", what a clean shutdown of
// Redis logs: an operator was sent to look at a Redis that had closed nothing, not at the network path.

const binaries = needOwnServerBinaries("redis");

describe.skipIf(binaries.skip)("the log line of a silent path to Redis", () => {
  let silent: SilenceableRedis;
  let limiter: SharedTokenBuckets;
  const lines: string[] = [];

  beforeAll(async () => {
    silent = await startSilenceableRedis();
    limiter = new SharedTokenBuckets(
      { redis: silent.url, leaseMs: 100, fallbackShare: 0.5 },
      createLogger("info", (line) => lines.push(line)),
    );
    expect(await limiter.ready(5_000)).toBe(true);
  }, 30_000);
  afterAll(async () => {
    await limiter?.close();
    await silent?.close();
  });

  it("names no closed connection: the PING that got no answer", async () => {
    const rate = { perSecond: 1_000, burst: 1_000 };
    const id = randomUUID();
    limiter.take(id, rate);
    await eventually(() => !limiter.leasePending(id), 2_000, "the first lease");
    silent.forwarder.blackHole();
    // leases time out (1 s), the PING after one times out too (1 s): the connection is dropped
    await eventually(
      () => {
        limiter.take(randomUUID(), rate);
        return !limiter.shared;
      },
      10_000,
      "limits made local",
    );
    const line = lines.map((l) => JSON.parse(l)).find((l) => /Redis unreachable/.test(l.msg ?? l.message));
    expect(line?.reason).toBeDefined();
    expect(line?.reason).not.toBe("Redis closed the connection");
    expect(line?.reason).toMatch(/PING/);
  }, 30_000);
});
