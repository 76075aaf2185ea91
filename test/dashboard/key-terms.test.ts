import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_PLANS } from "../../src/config/defaults.js";
import type { GatewayConfig, PlanSpec } from "../../src/config/types.js";
import { type AccountsFixture, startAccounts } from "../accounts/helpers.js";
import { launchChromium, needChromium } from "../support/browser.js";
import { mailTo } from "../support/outbox.js";

// What limits a key, on the keys table and the overview (docs/plans.md: "The dashboard shows both, each in
// its unit"): its plan's compute units a second and its own calls a second, its plan's quotas and whom they
// count; a revoked key is shown as revoked, with no settings to edit; a contract refused for its checksum
// is said as what an entry must be.

const EMAIL = "terms@example.com";
const chromium = needChromium();
const PLANS: GatewayConfig["plans"] = {
  ...DEFAULT_PLANS,
  // a plan the operator added, whose CU rate binds long before the key's call rate, and whose quota is
  // the account's
  metered: {
    ...(DEFAULT_PLANS.shared as PlanSpec),
    computeUnitRate: { perSecond: 50, burst: 100 },
    dailyQuota: 100_000,
    monthlyQuota: 0,
    quotaPer: "account",
    archive: false,
  },
  // one only an operator issues: the catalog does not list it, so only the key's own view has its terms
  internal: {
    ...(DEFAULT_PLANS.shared as PlanSpec),
    computeUnitRate: { perSecond: 30, burst: 60 },
    dailyQuota: 0,
    monthlyQuota: 0,
    orderable: false,
  },
};

describe.skipIf(chromium.skip)("a key's plan terms and status, in Chromium", () => {
  let fx: AccountsFixture;
  let browser: Browser;
  let page: Page;
  let accountId = 0;
  let metered = 0;
  let internal = 0;
  let revoked = 0;
  const row = (id: number) => page.locator(`#keys tr[data-key-id="${id}"]`);
  const card = (id: number) => page.locator(`section.card[data-key-id="${id}"]`);
  const heading = () => page.locator("h1").textContent();

  beforeAll(async () => {
    fx = await startAccounts({}, undefined, "sqlite", {
      domain: "localhost",
      listen: { host: "127.0.0.1", port: 0 },
      support: DEFAULT_CONFIG.support,
      plans: PLANS,
    });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage();
    expect((await fx.api("POST", "/v1/signup", { email: EMAIL })).status).toBe(202);
    const mail = (await mailTo(join(fx.dir, "outbox"), EMAIL)).body;
    const link = /(http:\/\/\S+#confirm=[A-Za-z0-9_-]+)/.exec(mail)?.[1] as string;
    await page.goto(link.replace("http://127.0.0.1:0", fx.origin));
    await page.locator("h1", { hasText: "Your keys" }).waitFor();
    accountId = (await fx.accounts.store.accountByEmail(EMAIL))?.id ?? 0;
    const issue = async (plan: string, archive?: boolean) =>
      (
        await fx.accounts.service.keys.issue(accountId, {
          networks: ["eth"],
          plan,
          ...(archive === undefined ? {} : { archive }),
        })
      ).view.id;
    metered = await issue("metered");
    // an operator's key without archive access, on a plan that includes them for the keys granted them
    internal = await issue("internal", false);
    revoked = await issue("shared");
    await fx.accounts.service.keys.revokeAny(revoked);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await fx?.close();
  });

  it("the keys table shows the plan's CU rate beside the key's call rate, and the plan's quota", async () => {
    // the page shows its keys from before they were issued: loaded again
    await page.goto(`${fx.origin}/#/keys`);
    await page.reload();
    await expect.poll(heading).toBe("Your keys");
    await row(metered).waitFor();
    const rate = await row(metered).locator('td[data-label="Rate"] .rate-line').allTextContents();
    expect(rate).toEqual(["50 CU/s, bursts of 100 CU", "200 calls/s, bursts of 400 calls"]);
    // a plan no customer may order: its terms come with the key itself
    expect(await row(internal).locator('td[data-label="Rate"] .rate-line').allTextContents()).toEqual([
      "30 CU/s, bursts of 60 CU",
      "200 calls/s, bursts of 400 calls",
    ]);
    expect(await row(metered).locator('td[data-label="Plan"]').textContent()).toBe(
      "Metered100,000 CU a day (one quota for all your keys on this plan)",
    );
    expect(await row(internal).locator('td[data-label="Plan"]').textContent()).toBe("Internalno quota");
    // a revoked key's row: its status, and its plan's rate as every row has
    expect(await row(revoked).locator('td[data-label="Rate"]').textContent()).toContain(
      "2,000 CU/s, bursts of 4,000 CU",
    );
    expect(await row(revoked).locator('td[data-label="Status"]').textContent()).toBe("revoked");
    // the order form says a quota is the account's
    await page.locator("#plan").selectOption("metered");
    expect(await page.locator("#plan-terms").textContent()).toBe(
      "50 CU a second, 100,000 CU a day (one quota for all your keys on this plan).",
    );
    await page.locator("#plan").selectOption("shared");
    expect(await page.locator("#plan-terms").textContent()).toBe(
      "2,000 CU a second, 10,000,000 CU a day, 200,000,000 CU a month, archive nodes.",
    );
  });

  it("the overview shows each key's status and rates; a revoked key has no settings link", async () => {
    await page.goto(`${fx.origin}/#/overview`);
    await expect.poll(heading).toBe("Overview");
    await card(metered).waitFor();
    expect(await card(metered).locator(".key-status").textContent()).toBe("Status: active");
    expect(await card(metered).locator(".key-rate").textContent()).toBe(
      "Rate: 50 CU/s, bursts of 100 CU and 200 calls/s, bursts of 400 calls, whichever is reached first.",
    );
    expect(await card(metered).locator('a[href$="/settings"]').count()).toBe(1);
    expect(await card(revoked).locator(".key-status").textContent()).toBe("Status: revoked");
    expect(await card(revoked).locator('a[href$="/settings"]').count()).toBe(0);
    expect(await card(revoked).locator('a[href$="/usage"]').count()).toBe(1);
  });

  it("a revoked key's settings page says it is revoked and offers no form", async () => {
    await page.goto(`${fx.origin}/#/keys/${revoked}/settings`);
    await expect.poll(heading).toContain("Settings of");
    await expect
      .poll(() => page.locator("#settings-ended").textContent())
      .toBe("This key is revoked: it no longer works, and its settings cannot be changed.");
    expect(await page.locator("form#settings").count()).toBe(0);
  });

  it("a key revoked while its settings are open is said to be, not “No such key”", async () => {
    const other = (await fx.accounts.service.keys.issue(accountId, { networks: ["eth"], plan: "shared" }))
      .view.id;
    await page.goto(`${fx.origin}/#/keys/${other}/settings`);
    await expect.poll(heading).toContain("Settings of");
    await page.getByLabel("Allowed methods").fill("eth_call");
    await fx.accounts.service.keys.revokeAny(other);
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect
      .poll(() => page.locator("#status").textContent())
      .toBe("Not saved: this key was revoked or has expired.");
    expect(await page.locator("#settings-ended").textContent()).toContain("This key is revoked");
  });

  it("a contract whose case fails its EIP-55 checksum is said as what an entry must be", async () => {
    await page.goto(`${fx.origin}/#/keys/${metered}/settings`);
    await expect.poll(heading).toContain("Settings of");
    await page.getByLabel("Allowed contracts").fill("0xdAC17F958D2ee523a2206206994597C13D831ec8");
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect
      .poll(() => page.locator("#settings-problem").textContent())
      .toBe(
        "Line 1, “0xdAC17F958D2ee523a2206206994597C13D831ec8”: not an address whose mixed case matches its EIP-55 checksum (or all one case).",
      );
  });

  it("fits a phone-sized screen: the two rates and the plan's terms do not scroll sideways", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const hash of ["#/keys", "#/overview"]) {
      await page.goto(`${fx.origin}/${hash}`);
      await page.locator(".rate-line, .key-rate").first().waitFor();
      expect(await page.evaluate<number>("document.documentElement.scrollWidth"), hash).toBeLessThanOrEqual(
        390,
      );
    }
  });
});
