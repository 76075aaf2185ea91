import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS, PLAN_FIELDS } from "../../src/config/defaults.js";
import { createLogger } from "../../src/log.js";
import { SharedQuotaLedger } from "../../src/plans/shared-quotas.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, type RunningGateway, startGateway, TEST_PLANS } from "../support/gateway.js";
import { needOwnServerBinaries, type OwnRedis, startOwnRedis } from "../support/own-servers.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client, type Closed } from "../support/ws-client.js";

// While a WebSocket message waits for its quota's lease from Redis (a hung Redis: up to its 1 s command
// timeout), the messages its client sends after it wait in the gateway, so that calls reach the node in the
// order sent. That wait held all of them with no bound: a client could pile up memory for as long as Redis
// hangs, where what it sends while its connection changes node is bounded by `limits.ws.maxBufferedBytes`
// and closed with 1008 past it (docs/websocket.md). Redis is paused here (CLIENT PAUSE, as
// test/scale/redis-paused-under-calls.test.ts does): its connections stay up and answer nothing meanwhile.

const binaries = needOwnServerBinaries("redis");

/** The bound in the test's config: far below what the client sends while a message of it waits. */
const BOUND = 8 * 1024;
/** Each message after the two first: an eth_blockNumber with an id of ~1 KB, a valid call anvil answers. */
const PAD = "x".repeat(1_000);
const AFTER = 24;

describe.skipIf(binaries.skip)("messages sent while one waits for its quota from a hung Redis", () => {
  let redis: OwnRedis;
  let admin: Redis;
  let anvil: Anvil;
  let quotas: SharedQuotaLedger;
  let gw: RunningGateway;
  let restore: () => void = () => {};
  const key = "FNqwaitBounded0000000000000000";

  beforeAll(async () => {
    [redis, anvil] = await Promise.all([startOwnRedis(), startAnvil()]);
    admin = new Redis(redis.url);
    quotas = new SharedQuotaLedger(
      { redis: redis.url, leaseMs: 100, fallbackShare: 1 },
      createLogger("silent"),
      () => {},
    );
    expect(await quotas.ready(10_000)).toBe(true);
    restore = resolveTestHosts();
    gw = await startGateway({
      upstreams: { eth: [{ url: anvil.url, ws: anvil.url.replace("http:", "ws:") }] },
      plans: {
        ...TEST_PLANS,
        daily: {
          ...PLAN_FIELDS,
          dailyQuota: 1_000_000,
          // a lease of a tenth of a second of this rate: 10 units, one eth_blockNumber (docs/compute-units.md)
          computeUnitRate: { perSecond: 100, burst: 1_000_000 },
        },
      },
      keys: [{ key, networks: "*", plan: "daily", rate: { perSecond: 10_000, burst: 10_000 } }],
      quotas,
      limits: { ws: { ...DEFAULT_LIMITS.ws, maxBufferedBytes: BOUND } },
    });
  }, 60_000);
  afterAll(async () => {
    restore();
    await gw?.close();
    await quotas?.close();
    admin?.disconnect();
    await Promise.all([redis?.close(), anvil?.stop()]);
  });

  it("are bounded as messages held while a connection moves: past maxBufferedBytes, closed with 1008", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${key}`);
    let closed: Closed | undefined;
    void client.closed.then((c) => {
      closed = c;
    });
    try {
      await admin.call("CLIENT", "PAUSE", "2000", "ALL");
      // the lease the upgrade took pays one call: the next asks Redis for another, and waits for it
      client.send(JSON.stringify({ jsonrpc: "2.0", id: 0, method: "eth_blockNumber", params: [] }));
      client.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }));
      for (let i = 0; i < AFTER; i++)
        client.send(
          JSON.stringify({ jsonrpc: "2.0", id: `${i}-${PAD}`, method: "eth_blockNumber", params: [] }),
        );
      // unbounded, every message waits out the pause and is answered; bounded, the client is closed
      const answered = () => client.received.filter((t) => t.includes('"result"')).length;
      await eventually(() => closed !== undefined || answered() === AFTER + 2, 10_000, "closed or answered");
      expect(closed, `${answered()} of ${AFTER + 2} answered, not closed`).toMatchObject({
        code: 1008,
        reason: "too much sent while a message waits for its quota",
      });
    } finally {
      client.close();
    }
  }, 30_000);
});
