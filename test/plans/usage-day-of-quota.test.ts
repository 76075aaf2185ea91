import { afterEach, describe, expect, it, vi } from "vitest";
import type { PlanSpec } from "../../src/config/types.js";
import { UsageCounter, type UsageRow, type UsageSink } from "../../src/keys/usage.js";
import { LocalQuotaLedger, type QuotaSpentSource } from "../../src/plans/quota-ledger.js";
import { StoreStartedLedger } from "../../src/plans/store-started.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, rpcBody, startGateway, TEST_PLANS } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// docs/plans.md, "Quotas": the periods are fixed UTC days and months, and a call's units count in the
// period they were held in (a settle after midnight changes the day it was held in, quota-ledger.ts); a
// quota a process does not count yet "starts from the account store's usage counts ... So a restart or a
// reload gives no quota back". A call held at 23:59:59.9 and answered after midnight was spent from the
// old day's (and month's) quota, but the key's usage (what the store, the dashboard's meters and the bill
// read) counted it in the new day: after a restart the new day's quota started from that usage and the
// call was spent a second time, from the new month's quota too.

const KEY = "FNdayOfQuota000000000000000000000";
const SOCKET_KEY = "FNsocketDayOfQuota000000000000000";
const shared = TEST_PLANS.shared as PlanSpec;

describe("a call held before midnight and answered after it", () => {
  let node: LoopbackNode | undefined;
  let wsNode: LoopbackWsNode | undefined;
  afterEach(async () => {
    vi.useRealTimers();
    await node?.close();
    await wsNode?.close();
  });

  it("counts in the key's usage on the day its quota spent it: a restart spends it once", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date("2026-11-30T23:59:59.900Z"));
    let release: () => void = () => {};
    let held = true;
    node = await startLoopbackNode(async (request) => {
      const { id } = JSON.parse(request.body) as { id: number };
      if (held) {
        held = false;
        await new Promise<void>((resolve) => {
          release = resolve;
        });
      }
      return { body: { jsonrpc: "2.0", id, result: "0x1" } };
    });
    // the account store's usage counts, as the proxy flushes them and a quota starts from them
    const rows: UsageRow[] = [];
    const sink: UsageSink = {
      add: async (batch) => {
        rows.push(...batch.rows);
      },
      close: async () => {},
    };
    const store: QuotaSpentSource = {
      spent: async (scope, day) => {
        const own = rows.filter(
          (r) => r.key === scope && r.day.slice(0, 7) === day.slice(0, 7) && r.day <= day,
        );
        const sum = (list: UsageRow[]) => list.reduce((total, r) => total + r.units, 0);
        return { day: sum(own.filter((r) => r.day === day)), month: sum(own) };
      },
    };
    const usage = new UsageCounter(sink, 3_600_000, undefined, () => Date.now());
    const options = {
      upstreams: { eth: [node.url] },
      plans: { ...TEST_PLANS, daily: { ...shared, dailyQuota: 100, monthlyQuota: 100 } },
      keys: [{ key: KEY, networks: "*" as const, plan: "daily", rate: { perSecond: 1e6, burst: 1e6 } }],
      usage,
    };
    const started = () =>
      startGateway({
        ...options,
        quotas: new StoreStartedLedger(new LocalQuotaLedger(undefined, () => Date.now()), store),
      });
    const balance = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "eth_getBalance",
      params: [`0x${"ab".repeat(20)}`, "latest"],
    });

    const first = await started();
    const late = first.call("eth", `/${KEY}`, { body: balance });
    await eventually(() => node?.requests.length === 1, 3_000, "the call at the node");
    // the call was held on November 30th; the node answers it on December 1st
    vi.setSystemTime(new Date("2026-12-01T00:00:00.100Z"));
    release();
    const answered = await late;
    expect(answered.status).toBe(200);
    expect(answered.headers["x-compute-units"]).toBe("20");
    await usage.flush();
    // its 20 CU counted where its quota spent them
    expect(rows.map((r) => [r.day, r.units])).toEqual([["2026-11-30", 20]]);
    await first.close();

    // a restart on December 1st: its day and month start from the store, and have spent nothing yet
    const second = await started();
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++)
        statuses.push(
          (
            await second.call("eth", `/${KEY}`, {
              body: rpcBody("eth_getBalance", [`0x${"ab".repeat(20)}`, "latest"]),
            })
          ).status,
        );
      expect(statuses).toEqual([200, 200, 200, 200, 200]);
    } finally {
      await second.close();
      await usage.close();
    }
  });

  it("over a WebSocket too", async () => {
    const restore = resolveTestHosts();
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date("2026-11-30T23:59:59.900Z"));
    let release: () => void = () => {};
    let asked = false;
    wsNode = await startLoopbackWsNode(
      evmNode({
        eth_getBalance: () => {
          asked = true;
          return new Promise((resolve) => {
            release = () => resolve("0x1");
          });
        },
      }),
    );
    const rows: UsageRow[] = [];
    const usage = new UsageCounter(
      {
        add: async (batch) => {
          rows.push(...batch.rows);
        },
        close: async () => {},
      },
      3_600_000,
      undefined,
      () => Date.now(),
    );
    const gw = await startGateway({
      upstreams: { eth: [wsNode.url] },
      plans: { ...TEST_PLANS, daily: { ...shared, dailyQuota: 100, monthlyQuota: 100 } },
      keys: [{ key: SOCKET_KEY, networks: "*", plan: "daily", rate: { perSecond: 1e6, burst: 1e6 } }],
      quotas: new LocalQuotaLedger(undefined, () => Date.now()),
      usage,
    });
    try {
      const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${SOCKET_KEY}`);
      const late = client.call("eth_getBalance", [`0x${"ab".repeat(20)}`, "latest"]);
      await eventually(() => asked, 3_000, "the call at the node");
      vi.setSystemTime(new Date("2026-12-01T00:00:00.100Z"));
      release();
      expect(await late).toMatchObject({ result: "0x1" });
      client.ws.close();
      await usage.flush();
      expect(rows.map((r) => [r.day, r.units])).toEqual([["2026-11-30", 20]]);
    } finally {
      await gw.close();
      await usage.close();
      restore();
    }
  });
});
