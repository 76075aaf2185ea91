import { request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_PLANS } from "../../src/config/defaults.js";
import type { GatewayConfig, PlanSpec } from "../../src/config/types.js";
import { freePort } from "../../src/dev/free-port.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { type AccountsFixture, proxyOnFixture, startAccountsFor } from "../accounts/helpers.js";
import { eventually } from "../support/eventually.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// One proxy without Redis (no `sharedLimits`) counts quotas in its process. docs/plans.md: "A reload
// (SIGHUP) of the proxies applies new numbers to new requests; what a key spent is kept." A reload that
// moved a plan's keys to another quota scope (`quotaPer` key ↔ account), or a restart, started that scope
// at 0: a key that had spent 800 of its 1,000 CU day was served 100 more calls (1,800 CU), and the
// dashboard read "1,800 of 1,000". A scope's first call now starts it from the account store's usage counts.

const team = (quotaPer: "key" | "account"): GatewayConfig["plans"] => ({
  ...DEFAULT_PLANS,
  team: { ...(DEFAULT_PLANS.shared as PlanSpec), dailyQuota: 1_000, monthlyQuota: 0, quotaPer },
});

describe("a quota's spend on one proxy without Redis", () => {
  let fx: AccountsFixture | undefined;
  let node: LoopbackNode | undefined;
  let proxy: RunningProxy | undefined;
  afterEach(async () => {
    await proxy?.close();
    await node?.close();
    await fx?.close();
    [proxy, node, fx] = [undefined, undefined, undefined];
  });

  /** A proxy with a key of `team` that spent 800 of its 1,000 CU day, all flushed to the store. */
  async function spent800(quotaPer: "key" | "account") {
    const port = await freePort();
    fx = await startAccountsFor(port, team(quotaPer), 100);
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a", eth_chainId: "0x1" }));
    const config = proxyOnFixture(fx, port, node.url, { plans: team(quotaPer) }, 100);
    proxy = await runProxy(config, createLogger("silent"));
    const accounts = fx.accounts.service;
    const account = await accounts.admin.createAccount("team@example.com");
    const { key, view } = await accounts.keys.issue(account.id, { networks: ["eth"], plan: "team" });
    // eth_blockNumber: 10 CU
    const call = async () => {
      const answer = await request(`http://127.0.0.1:${port}/${key}`, {
        method: "POST",
        headers: { host: "eth.localhost", "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
      });
      await answer.body.dump();
      return answer.statusCode;
    };
    await eventually(async () => (await call()) === 200, 5_000, "the proxy knows the key");
    for (let i = 1; i < 80; i++) expect(await call()).toBe(200);
    const usedToday = async () => (await accounts.usage.overview(account)).keys[0]?.quota.used.today;
    await eventually(async () => (await usedToday()) === 800, 5_000, "800 CU in the usage counts");
    /** The calls served until the quota refused one, and what the dashboard then shows spent today. */
    const servedUntilRefused = async (already = 0) => {
      let served = already;
      for (; served < 100; served++) {
        const status = await call();
        if (status !== 200) {
          expect(status).toBe(402);
          break;
        }
      }
      // until the usage flush has carried every call served since the 800 (10 CU each) to the store
      await eventually(
        async () => (await usedToday()) === 800 + served * 10,
        5_000,
        "the calls served in the usage counts",
      );
      return { served, usedToday: await usedToday() };
    };
    return { config, call, view, servedUntilRefused };
  }

  for (const [from, to] of [
    ["key", "account"],
    ["account", "key"],
  ] as const)
    it(`is kept through a reload that moves its plan from quotaPer ${from} to ${to}`, async () => {
      const { config, servedUntilRefused } = await spent800(from);
      proxy?.reload({ ...config, plans: team(to) });
      // 20 more calls (200 CU), then 402 QUOTA_EXCEEDED
      expect(await servedUntilRefused()).toEqual({ served: 20, usedToday: 1_000 });
    });

  it("is kept through a restart", async () => {
    const { config, call, servedUntilRefused } = await spent800("account");
    await proxy?.close();
    proxy = await runProxy(config, createLogger("silent"));
    // the first call that the new proxy serves (it knows the key) is one of the 20 left
    await eventually(async () => (await call()) === 200, 5_000, "the restarted proxy knows the key");
    expect(await servedUntilRefused(1)).toEqual({ served: 20, usedToday: 1_000 });
  });
});
