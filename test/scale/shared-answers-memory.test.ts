import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { FLEET_DOMAIN, type FleetProxy, startFleetProxy, stopFleetProxy } from "../support/fleet.js";
import { needOwnServerBinaries, type OwnRedis, startOwnRedis } from "../support/own-servers.js";

// Two proxies on one Redis (`sharedLimits.redis`), set up as docs/plans.md "Many instances" says the quotas'
// Redis must be: `noeviction`, with a maxmemory. The same Redis takes every final answer a proxy serves
// (docs/cache.md, "Many instances"). Callers reading old blocks filled it, after which Redis refused every
// quota lease (OOM), each proxy counted its quotas alone, and the fleet served a key 1,500 CU of a 1,000 CU
// daily quota. Answers now stop being stored at 75 % of that maxmemory.

const binaries = needOwnServerBinaries("redis");
const QUOTA_KEY = "FNfleetQuotaKey000000000000000";
const READER_KEY = "FNfleetReaderKey00000000000000";
const QUOTA = 1_000;

describe.skipIf(binaries.skip)(
  "one Redis for quotas and the shared answers, as the docs configure it",
  () => {
    let anvil: Anvil;
    let redis: OwnRedis;
    let admin: Redis;
    let dir = "";
    const proxies: FleetProxy[] = [];

    const post = async (proxy: FleetProxy, key: string, body: unknown) => {
      const answer = await request(`http://127.0.0.1:${proxy.port}/${key}`, {
        method: "POST",
        headers: { host: `eth.${FLEET_DOMAIN}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: answer.statusCode, text: await answer.body.text() };
    };

    beforeAll(async () => {
      anvil = await startAnvil({ chainId: 1 });
      await anvil.rpc("anvil_mine", ["0xbb8"]); // 3,000 blocks: finalized about 2,936
      redis = await startOwnRedis();
      admin = new Redis(redis.url);
      dir = mkdtempSync(join(tmpdir(), "shared-answers-memory-"));
      const config = join(dir, "fleet.yaml");
      writeFileSync(
        config,
        [
          `domain: ${FLEET_DOMAIN}`,
          "listen: { host: 127.0.0.1, port: 0 }",
          "operator: { listen: { host: 127.0.0.1, port: 0 } }",
          `upstreams: { eth: ["${anvil.url}"] }`,
          "health: { probeIntervalMs: 200 }",
          "log: { level: info, access: false }",
          `sharedLimits: { redis: "${redis.url}", leaseMs: 100, fallbackShare: 1 }`,
          `plans: ${JSON.stringify({
            metered: { computeUnitRate: { perSecond: 1_000, burst: 100_000 }, dailyQuota: QUOTA },
            reader: { computeUnitRate: { perSecond: 1e9, burst: 1e9 } },
          })}`,
          `keys: ${JSON.stringify([
            {
              key: QUOTA_KEY,
              networks: ["eth"],
              plan: "metered",
              rate: { perSecond: 100_000, burst: 100_000 },
            },
            {
              key: READER_KEY,
              networks: ["eth"],
              plan: "reader",
              rate: { perSecond: 100_000, burst: 100_000 },
            },
          ])}`,
        ].join("\n"),
      );
      proxies.push(await startFleetProxy(config), await startFleetProxy(config));
      await eventually(
        async () =>
          (await Promise.all(proxies.map((p) => p.dependencyUp("shared_limits")))).every((v) => v === 1),
        10_000,
        "both proxies on Redis",
      );
      // the operator's Redis, as docs/plans.md says the quotas' Redis must be: it never evicts. Its room is
      // 1 MB past what it holds with both proxies connected (their dozen connections' buffers, which
      // grow on a loaded host, took most of it when measured before they started); a proxy reads Redis's
      // memory at its first answer to share, after this
      const info = await admin.info("memory");
      const used = Number(/used_memory:(\d+)/.exec(info)?.[1]);
      await admin.config("SET", "maxmemory", String(used + 1_000_000));
      await admin.config("SET", "maxmemory-policy", "noeviction");
    }, 60_000);

    /** Answers the first proxy left unshared for Redis's memory (gateway_cache_shared_total{outcome="full"}). */
    const fullCount = async () => {
      const answer = await request(`http://127.0.0.1:${(proxies[0] as FleetProxy).operatorPort}/metrics`);
      const line = (await answer.body.text())
        .split("\n")
        .find((l) => l.startsWith('gateway_cache_shared_total{outcome="full"}'));
      return Number(line?.split(" ").pop() ?? 0);
    };

    afterAll(async () => {
      await Promise.all(proxies.map(stopFleetProxy));
      admin?.disconnect();
      await redis?.close();
      await anvil?.stop();
      if (dir !== "") rmSync(dir, { recursive: true, force: true });
    });

    it("stops storing answers before Redis is full, and holds a key's daily quota across the two proxies", async () => {
      // dApps read final blocks through the fleet: each answer is shared in Redis for 24 hours, until it
      // holds 75 % of its maxmemory
      for (let from = 1; from < 2_900 && (await fullCount()) === 0; from += 100) {
        const batch = Array.from({ length: 100 }, (_, i) => ({
          jsonrpc: "2.0",
          id: i,
          method: "eth_getBlockByNumber",
          params: [`0x${(from + i).toString(16)}`, true],
        }));
        const answer = await post(proxies[0] as FleetProxy, READER_KEY, batch);
        expect(answer.status, answer.text).toBe(200);
      }
      expect(await fullCount()).toBeGreaterThan(0);
      // each answer is compressed and written after its call was answered: on a loaded host, later
      await eventually(
        async () => (await admin.keys("gateway:answer:*")).length > 100,
        30_000,
        "more than a batch of answers in Redis",
      );
      // and Redis still takes the quotas' writes
      expect(await admin.set("still:room", "x")).toBe("OK");

      // a customer's key of a 1,000 CU a day plan, its calls landing on the two proxies in turn
      let spent = 0;
      for (let i = 0; i < 300; i++) {
        const answer = await post(proxies[i % 2] as FleetProxy, QUOTA_KEY, {
          jsonrpc: "2.0",
          id: i,
          method: "eth_chainId",
          params: [],
        });
        if (answer.status === 200) spent += 5;
        else expect(answer.status, answer.text).toBe(402);
      }
      // docs/plans.md: "Redis never grants more than the quota holds, so no instance serves past it"
      const said = proxies.flatMap((p) => p.logs.filter((l) => /redis|quota/i.test(l))).slice(0, 4);
      expect(spent, said.join("\n")).toBeLessThanOrEqual(QUOTA);
    }, 120_000);
  },
);
