import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AccountsFixture, startAccounts } from "../accounts/helpers.js";
import { launchChromium, needChromium } from "../support/browser.js";
import { mailTo } from "../support/outbox.js";

// A key in its rotation grace period whose successor was revoked (it leaked as it was sent) is rotated again
// (docs/accounts.md, POST /v1/keys/{id}/rotate): the keys page offers that rotation, as the API allows it.
// Without it the customer's only key of the line works until the grace period ends, then none does.

const EMAIL = "leaked@example.com";
const chromium = needChromium();

describe.skipIf(chromium.skip)("rotating a key whose successor was revoked, in Chromium", () => {
  let fx: AccountsFixture;
  let browser: Browser;
  let page: Page;
  let old = 0;
  let leaked = 0;
  const row = (id: number) => page.locator(`#keys tr[data-key-id="${id}"]`);

  beforeAll(async () => {
    fx = await startAccounts();
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage();
    expect((await fx.api("POST", "/v1/signup", { email: EMAIL })).status).toBe(202);
    const mail = (await mailTo(join(fx.dir, "outbox"), EMAIL)).body;
    const link = /(http:\/\/\S+#confirm=[A-Za-z0-9_-]+)/.exec(mail)?.[1] as string;
    await page.goto(link.replace(/^http:\/\/[^/#]*/, fx.origin));
    await page.locator("h1", { hasText: "Your keys" }).waitFor();
    const accountId = (await fx.accounts.store.accountByEmail(EMAIL))?.id ?? 0;
    const { keys } = fx.accounts.service;
    old = (await keys.issue(accountId, { networks: ["eth"], plan: "shared" })).view.id;
    leaked = (await keys.rotateAny(old)).view.id;
    await keys.revokeAny(leaked);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await fx?.close();
  });

  it("offers the rotation the API allows, and it goes through", async () => {
    // the keys were issued after the page showed the list: shown anew
    await page.reload();
    await expect.poll(() => row(old).count()).toBe(1);
    expect(await row(leaked).locator(".key-status").textContent()).toBe("revoked");
    const rotate = row(old).getByRole("button", { name: /Rotate/ });
    expect(await rotate.count()).toBe(1);
    page.once("dialog", (dialog) => void dialog.accept());
    await rotate.click();
    await expect.poll(() => page.locator("#status").textContent()).toContain("New key");
    expect(await page.locator("#status").getAttribute("class")).not.toBe("error");
    // the new key is listed, active, and the old one has its successor again: no second rotation offered
    await expect.poll(() => page.locator("#keys tbody tr").count()).toBe(3);
    expect(
      await row(old)
        .getByRole("button", { name: /Rotate/ })
        .count(),
    ).toBe(0);
  });
});
