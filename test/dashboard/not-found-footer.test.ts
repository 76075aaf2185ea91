import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AccountsFixture, startAccounts } from "../accounts/helpers.js";
import { launchChromium, needChromium } from "../support/browser.js";

// docs/accounts.md: "The dedicated-node option and the support contact are in every page's footer." A
// customer who followed a stale link or mistyped an address (the control plane's static "Page not found"
// page) had neither: that page had no footer at all, so the one page of someone lost said nowhere whom to
// ask. In Chromium, with an operator's own support contact, whose link holds a `&` to be written as such.

const SUPPORT = {
  email: "help@operator.example",
  dedicatedNodeUrl: "https://operator.example/dedicated?from=dashboard&plan=node",
};
const chromium = needChromium();

describe.skipIf(chromium.skip)("the support footer of the dashboard's pages, in Chromium", () => {
  let fx: AccountsFixture;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    fx = await startAccounts({}, undefined, "sqlite", {
      domain: "localhost",
      listen: { host: "127.0.0.1", port: 0 },
      support: SUPPORT,
    });
    browser = await launchChromium();
    page = await browser.newPage();
  });
  afterAll(async () => {
    await browser?.close();
    await fx?.close();
  });

  /** The footer's text and its links' targets, as the customer's browser has them. */
  const footer = async () => ({
    // read at once, not waited for: a page without a footer has none to wait for
    text: (await page.evaluate<string>('document.querySelector("footer")?.textContent ?? ""'))
      .replace(/\s+/g, " ")
      .trim(),
    links: await page.locator("footer a").evaluateAll((links) => links.map((a) => a.getAttribute("href"))),
  });

  it("shows on the page not found the footer the dashboard shows", async () => {
    await page.goto(`${fx.origin}/`);
    await page.locator("footer a").first().waitFor();
    const dashboard = await footer();
    expect(dashboard.links).toEqual([SUPPORT.dedicatedNodeUrl, `mailto:${SUPPORT.email}`]);

    const answer = await page.goto(`${fx.origin}/keys/old-link`);
    expect(answer?.status()).toBe(404);
    expect(await page.locator("h1").textContent()).toBe("Page not found");
    expect(await footer()).toEqual(dashboard);
  });
});
