import { describe, expect, it } from "vitest";
import { PostgresUsageSink } from "../../src/keys/postgres-grants.js";
import { SqliteUsageSink } from "../../src/keys/sqlite-grants.js";
import { createLogger } from "../../src/log.js";
import type { QuotaCrossing } from "../../src/plans/quota-ledger.js";
import { quotaNotices } from "../../src/plans/quota-notices.js";
import { STORES, startAccounts } from "../accounts/helpers.js";
import { eventually } from "../support/eventually.js";

// A quota raised within its period (a reload with a larger monthlyQuota) is crossed again at 80 % and
// 100 % of its new size. The notices were written once per scope, period and threshold, in the proxy and
// in the store's key alike: the customer who had both e-mails for the old size got none for the new one,
// and was cut off at it unwarned.
describe.each(STORES)("the notices of a quota raised within its period (%s store)", (store) => {
  it("are written for the new size, each once", async () => {
    const fx = await startAccounts({}, 0, store);
    const sink = fx.database.startsWith("postgres")
      ? new PostgresUsageSink(fx.database)
      : new SqliteUsageSink(fx.database);
    const lines: string[] = [];
    try {
      const account = await fx.accounts.service.admin.createAccount("raised@example.com");
      const crossed = quotaNotices(
        sink,
        createLogger("info", (line) => lines.push(line)),
      );
      const crossing = (threshold: 80 | 100, limit: number): QuotaCrossing => ({
        scope: "FNraised1",
        period: "month",
        periodId: "2026-11",
        threshold,
        limit,
        resetsAt: Date.UTC(2026, 11, 1),
        owner: { keyId: "FNraised1", accountId: `account:${account.id}`, plan: "tiny" },
      });
      for (const [threshold, limit] of [
        [80, 1_000],
        [100, 1_000],
        [100, 1_000],
        [80, 2_000],
        [100, 2_000],
      ] as const)
        crossed(crossing(threshold, limit));
      await eventually(
        async () => (await fx.accounts.store.unsentNotices()).length === 4,
        5_000,
        "four notices in the store",
      );
      const notices = await fx.accounts.store.unsentNotices();
      expect(notices.map((n) => [n.threshold, Number(n.quota)]).sort()).toEqual(
        [
          [80, 1_000],
          [100, 1_000],
          [80, 2_000],
          [100, 2_000],
        ].sort(),
      );
      expect(lines.filter((line) => line.includes('"quota crossed"'))).toHaveLength(4);
      // another proxy writing the same crossing adds nothing
      await sink.notice({ ...(notices[0] as (typeof notices)[number]), quota: Number(notices[0]?.quota) });
      expect(await fx.accounts.store.unsentNotices()).toHaveLength(4);
    } finally {
      await sink.close();
      await fx.close();
    }
  });
});
