import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PLANS } from "../../src/config/defaults.js";
import { type AccountsFixture, startAccounts } from "../accounts/helpers.js";
import { launchChromium, needChromium } from "../support/browser.js";
import { mailTo } from "../support/outbox.js";

// A keys page open while its keys change elsewhere (another tab, the API, the operator): a rotation it then
// asks for is refused (KEY_ALREADY_ROTATED, "rotate its successor"; KEY_NOT_FOUND for a key revoked), and the
// page shows the keys as they now are beside the refusal, so the successor it names is there to rotate and a
// revoked key no longer reads as active.

const EMAIL = "stale@example.com";
const chromium = needChromium();

describe.skipIf(chromium.skip)("a key action on a keys page gone stale, in Chromium", () => {
  let fx: AccountsFixture;
  let browser: Browser;
  let page: Page;
  let accountId = 0;
  const row = (id: number) => page.locator(`#keys tr[data-key-id="${id}"]`);
  const status = () => page.locator("#status").textContent();

  beforeAll(async () => {
    fx = await startAccounts();
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage();
    page.on("dialog", (dialog) => void dialog.accept());
    expect((await fx.api("POST", "/v1/signup", { email: EMAIL })).status).toBe(202);
    const mail = (await mailTo(join(fx.dir, "outbox"), EMAIL)).body;
    const link = /(http:\/\/\S+#confirm=[A-Za-z0-9_-]+)/.exec(mail)?.[1] as string;
    await page.goto(link.replace(/^http:\/\/[^/#]*/, fx.origin));
    await page.locator("h1", { hasText: "Your keys" }).waitFor();
    accountId = (await fx.accounts.store.accountByEmail(EMAIL))?.id ?? 0;
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await fx?.close();
  });

  it("a key rotated elsewhere: the refusal, and its successor listed to rotate", async () => {
    const { keys } = fx.accounts.service;
    const id = (await keys.issue(accountId, { networks: ["eth"], plan: "shared" })).view.id;
    await page.reload();
    await expect.poll(() => row(id).count()).toBe(1);
    const successor = (await keys.rotateAny(id)).view.id;
    await row(id)
      .getByRole("button", { name: /Rotate/ })
      .click();
    await expect.poll(status).toContain("rotate its successor");
    await expect.poll(() => row(successor).count()).toBe(1);
    expect(
      await row(successor)
        .getByRole("button", { name: /Rotate/ })
        .count(),
    ).toBe(1);
    expect(
      await row(id)
        .getByRole("button", { name: /Rotate/ })
        .count(),
    ).toBe(0);
    expect(await page.locator("#status").getAttribute("class")).toBe("error");
  });

  it("a key revoked elsewhere: the refusal, and the key shown revoked", async () => {
    const { keys } = fx.accounts.service;
    const id = (await keys.issue(accountId, { networks: ["eth"], plan: "dedicated" })).view.id;
    await page.reload();
    await expect.poll(() => row(id).count()).toBe(1);
    await keys.revokeAny(id);
    await row(id)
      .getByRole("button", { name: /Rotate/ })
      .click();
    await expect.poll(() => page.locator("#status").getAttribute("class")).toBe("error");
    await expect.poll(() => row(id).locator(".key-status").textContent()).toBe("revoked");
  });

  it("a key ordered elsewhere up to the plan's limit: the refusal, and the key it counts listed", async () => {
    await page.reload();
    await page.locator("#get-key").waitFor();
    const before = await page.locator("#keys tbody tr").count();
    // orders from another tab, up to the plan's limit of keys a customer may hold at once
    const { keys } = fx.accounts.service;
    const held = async () =>
      (await fx.accounts.store.keys(accountId)).filter(
        (k) => k.plan === "shared" && k.status === "active" && (k.expiresAt ?? Infinity) > Date.now(),
      ).length;
    const maxKeys = DEFAULT_PLANS.shared?.maxKeys ?? 0;
    let id = 0;
    while ((await held()) < maxKeys)
      id = (await keys.issue(accountId, { networks: ["bsc"], plan: "shared" })).view.id;
    expect(id).toBeGreaterThan(0);
    await page.locator("#network").selectOption("eth");
    await page.locator("#plan").selectOption("shared");
    await page.getByRole("button", { name: "Send me the key" }).click();
    await expect.poll(() => page.locator("#status").getAttribute("class")).toBe("error");
    expect(await status()).toContain("as many keys of this plan as the plan allows");
    await expect.poll(() => row(id).count()).toBe(1);
    expect(await page.locator("#keys tbody tr").count()).toBeGreaterThan(before);
  });
});
