import { describe, expect, it } from "vitest";
import type { ServiceContext } from "../../src/control/accounts/context.js";
import type { Account } from "../../src/control/accounts/types.js";
import { UsageReports } from "../../src/control/accounts/usage.js";

// A usage range's days are days of the calendar: one that does not exist (February 30th) is refused
// naming the field and the day, as the API refuses any other bad from or to, not rolled over into March.
describe("a usage range", () => {
  const store = { keys: async () => [], usage: async () => [] };
  const reports = new UsageReports({
    now: () => Date.parse("2026-03-15T12:00:00Z"),
    store,
  } as unknown as ServiceContext);
  const account = { id: "acct" } as unknown as Account;

  it("refuses an impossible day in from or to, naming the field and the day", async () => {
    await expect(reports.ofAccount(account, "2026-02-30", "2026-03-10")).rejects.toMatchObject({
      code: "INVALID_FIELD",
      detail: { field: "from", reason: expect.stringContaining("2026-02-30") },
    });
    await expect(reports.ofAccount(account, "2026-02-01", "2026-04-31")).rejects.toMatchObject({
      code: "INVALID_FIELD",
      detail: { field: "to", reason: expect.stringContaining("2026-04-31") },
    });
    await expect(reports.ofAccount(account, "2026-02-29", undefined)).rejects.toMatchObject({
      code: "INVALID_FIELD",
      detail: { field: "from" },
    });
  });

  it("takes real days, a leap day among them", async () => {
    expect(await reports.ofAccount(account, "2026-02-28", "2026-03-01")).toMatchObject({
      from: "2026-02-28",
      to: "2026-03-01",
    });
    expect(await reports.ofAccount(account, "2024-02-29", "2024-03-01")).toMatchObject({
      from: "2024-02-29",
    });
  });
});
