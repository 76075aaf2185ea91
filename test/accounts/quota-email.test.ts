import { describe, expect, it } from "vitest";
import type { ServiceContext } from "../../src/control/accounts/context.js";
import { type Email, quotaEmail } from "../../src/control/accounts/emails.js";
import { QuotaMail } from "../../src/control/accounts/quota-mail.js";
import type { PendingNotice } from "../../src/control/accounts/types.js";

// The quota e-mails' words (docs/plans.md). The 100 % one is also sent when a call was refused for costing
// more than was left: it must not say the quota is all spent then, as cheaper calls still pass.
describe("the quota e-mails", () => {
  const notice = (threshold: number, scope = "FNabcdefgh"): PendingNotice => ({
    scope,
    period: "2026-11-27",
    threshold,
    accountId: 1,
    keyPrefix: "FNabcdefgh",
    plan: "shared",
    quota: 10_000_000,
    resetsAt: Date.UTC(2026, 10, 28),
    email: "owner@example.com",
  });

  it("at 100 %: reached, what is refused, and when it resets, in words a person reads", () => {
    const mail = quotaEmail(notice(100), "https://dashboard.example.com");
    expect(mail.subject).toBe("The daily quota of FNabcdefgh… is reached");
    expect(mail.text).toContain(
      "The daily quota of your key FNabcdefgh… (10,000,000 compute units on the shared plan) is reached: calls " +
        "that cost more than what is left of it are refused with HTTP 402 (QUOTA_EXCEEDED) until it resets at " +
        "2026-11-28 00:00 UTC.",
    );
    // the overview, where the meters against the quota are
    expect(mail.text).toContain("https://dashboard.example.com/#/overview");
  });

  it("at 80 %: how much is used, of which quota, for the key or the account", () => {
    expect(quotaEmail(notice(80), "https://d.example").text).toContain(
      "Your key FNabcdefgh… used 80% of the daily quota (10,000,000 compute units on the shared plan).",
    );
    const monthly = { ...notice(80, "account:1"), period: "2026-11" };
    // a quota of the account's keys on the plan is no one key's: the subject names none
    expect(quotaEmail(monthly, "https://d.example").subject).toBe(
      "80% of the monthly quota of your shared plan's keys used",
    );
    expect(quotaEmail(monthly, "https://d.example").text).toContain(
      "Your account's keys on the shared plan used 80%",
    );
  });
});

// Two proxies may write a scope's 100 % a few milliseconds before its 80 %: the customer reads them in
// their order, and an 80 % written after the 100 % was mailed is not sent at all.
describe("the quota e-mails' order", () => {
  const notice = (threshold: number, period = "2026-11-27", quota = 100): PendingNotice => ({
    scope: "FNabcdefgh",
    period,
    threshold,
    accountId: 1,
    keyPrefix: "FNabcdefgh",
    plan: "shared",
    quota,
    resetsAt: Date.UTC(2026, 10, 28),
    email: "owner@example.com",
  });

  it("80 % before 100 %, whichever was written first; a late 80 % after a mailed 100 % not at all", async () => {
    let unsent: PendingNotice[] = [notice(100), notice(80)];
    const mailed: string[] = [];
    const context = {
      store: {
        unsentNotices: async () => {
          const now = unsent;
          unsent = [];
          return now;
        },
        markNoticeSent: async () => true,
        unmarkNotice: async () => {},
      },
      config: { publicUrl: "https://d.example", listen: { host: "127.0.0.1", port: 0 } },
      mail: async (_to: string, email: Email) => {
        mailed.push(email.subject);
      },
      now: () => Date.now(),
    } as unknown as ServiceContext;
    const sender = new QuotaMail(context, 60_000, (error) => {
      throw error;
    });
    try {
      await sender.sendPending();
      expect(mailed).toEqual([
        "80% of the daily quota of FNabcdefgh… used",
        "The daily quota of FNabcdefgh… is reached",
      ]);
      mailed.length = 0;
      // the next day's 100 %, mailed; then that day's 80 %, written late
      unsent = [notice(100, "2026-11-28")];
      await sender.sendPending();
      unsent = [notice(80, "2026-11-28")];
      await sender.sendPending();
      expect(mailed).toHaveLength(1);
      expect(mailed[0]).toContain("is reached");
      mailed.length = 0;
      // the quota raised the same day: the new size's 80 % and 100 % are news
      unsent = [notice(80, "2026-11-28", 200)];
      await sender.sendPending();
      unsent = [notice(100, "2026-11-28", 200)];
      await sender.sendPending();
      expect(mailed).toHaveLength(2);
      expect(mailed[0]).toContain("80%");
      expect(mailed[1]).toContain("is reached");
    } finally {
      await sender.close();
    }
  });
});
