import { generateKeyPairSync } from "node:crypto";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AccountsFixture, startAccounts } from "../accounts/helpers.js";
import { launchChromium, needChromium } from "../support/browser.js";
import { eventually } from "../support/eventually.js";
import { mailTo, outboxMails } from "../support/outbox.js";
import { tokenIn } from "../support/smtp.js";

// What a customer trying the dashboard on a phone met (an audit in Chromium): the answer to "Send me the
// key" drawn below the fold of a redrawn page; a session that ended mid-visit answered with the API's own
// words; a pasted sign-in token that had expired called "already used"; a link a mail client added a dot
// to ignored without a word; the usage chart's text 7 px high at 390 px wide; "Signed out." said when the
// sign-out never reached the server, its session still alive in the browser.

const EMAIL = "phone@example.com";
const PHONE = { width: 390, height: 844 };
const chromium = needChromium();

describe.skipIf(chromium.skip)("the dashboard on a customer's paths, in Chromium", () => {
  let fx: AccountsFixture;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const outbox = () => join(fx.dir, "outbox");
  const status = () => page.locator("#status").textContent();

  beforeAll(async () => {
    fx = await startAccounts();
    browser = await launchChromium();
    context = await browser.newContext({ viewport: PHONE });
    page = await context.newPage();
    expect((await fx.api("POST", "/v1/signup", { email: EMAIL })).status).toBe(202);
    const link = /(http:\/\/\S+#confirm=[A-Za-z0-9_-]+)/.exec((await mailTo(outbox(), EMAIL)).body)?.[1];
    await page.goto((link as string).replace("http://127.0.0.1:0", fx.origin));
    await page.locator("h1", { hasText: "Your keys" }).waitFor();
  });
  afterAll(async () => {
    await browser?.close();
    await fx?.close();
  });

  it("shows the answer to 'Send me the key' where the customer is looking, on a phone", async () => {
    await page.locator("#get-key button[type=submit]").scrollIntoViewIfNeeded();
    await page.locator("#get-key button[type=submit]").click();
    await expect.poll(status).toContain("sent to");
    const box = await page.locator("#status").boundingBox();
    expect(box).not.toBeNull();
    expect((box?.y ?? -1) >= 0 && (box?.y ?? PHONE.height) + (box?.height ?? 0) <= PHONE.height).toBe(true);
  });

  it("draws the usage chart's text at a readable size on a phone", async () => {
    await page.goto(`${fx.origin}/#/usage`);
    await page.locator(".chart svg text").first().waitFor();
    const heights = await page
      .locator(".chart svg text")
      .evaluateAll((texts) => texts.map((t) => t.getBoundingClientRect().height));
    expect(Math.min(...heights)).toBeGreaterThanOrEqual(11);
    expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(
      PHONE.width,
    );
  });

  it("says a link a mail client cut or added to is not a whole link, with the way on", async () => {
    const other = await (await browser.newContext({ viewport: PHONE })).newPage();
    await other.goto(`${fx.origin}/#confirm=${"A".repeat(32)}.`);
    await expect
      .poll(() => other.locator("main [role=alert]").textContent())
      .toMatch(/not a whole link.*Enter your e-mail address/);
    await other.context().close();
  });

  it("says a pasted sign-in token that expired has expired", async () => {
    const other = await (await browser.newContext({ viewport: PHONE })).newPage();
    await fx.api("POST", "/v1/login", { email: EMAIL });
    await eventually(
      () => outboxMails(outbox()).filter((m) => m.to === EMAIL).length >= 3,
      5_000,
      "the sign-in e-mail",
    );
    const token = tokenIn(
      outboxMails(outbox())
        .filter((m) => m.to === EMAIL)
        .at(-1)?.body ?? "",
    );
    fx.advance(2 * 3_600_000);
    await other.goto(fx.origin);
    await other.locator("#token").fill(token);
    await other.locator("#token-form button[type=submit]").click();
    await expect.poll(() => other.locator("#status").textContent()).toContain("This token has expired");
    await other.context().close();
  });

  it("says a JWT key's id the gateway cannot take by its rule, not as a paste that is no PEM", async () => {
    await page.goto(`${fx.origin}/#/keys`);
    await page.locator("#keys a", { hasText: "Settings" }).first().click();
    const pem = generateKeyPairSync("ec", { namedCurve: "P-256" })
      .publicKey.export({ type: "spki", format: "pem" })
      .toString();
    await page.locator("#setting-jwtKeys").fill(`id: bad id!\n${pem}`);
    await page.locator("#settings button[type=submit]").click();
    await expect.poll(() => page.locator("#settings-problem").textContent()).toContain("up to 64 letters");
  });

  it("loads the page shown again from its own link in the page navigation, for new numbers", async () => {
    await page.goto(`${fx.origin}/#/overview`);
    await page.getByRole("link", { name: "Overview" }).and(page.locator("[aria-current=page]")).waitFor();
    await page.locator("main h1").waitFor();
    // a customer watching usage clicks the page's own link (no hashchange): the page asks for its numbers again
    const asked = page.waitForRequest((r) => r.url().endsWith("/v1/overview"), { timeout: 5_000 });
    await page.locator("#page-nav a[aria-current=page]").click();
    await asked;
  });

  it("never says “Signed out.” when the sign-out did not reach the server: the session still works", async () => {
    await page.goto(`${fx.origin}/#/keys`);
    await page.locator("h1", { hasText: "Your keys" }).waitFor();
    // the connection drops as the customer signs out on a shared computer (Chromium's own network failure)
    await page.route("**/v1/logout", (r) => r.abort("internetdisconnected"));
    try {
      await page.getByRole("button", { name: "Sign out" }).click();
      await expect.poll(status).toMatch(/^Not signed out/);
      expect(await page.locator("#status").getAttribute("class")).toBe("error");
      // what the page must not hide: the session is alive, and a reload is signed in
      const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
      const answer = await fetch(`${fx.origin}/v1/account`, { headers: { cookie } });
      expect(answer.status).toBe(200);
      expect(await page.locator("#account-email").textContent()).toBe(EMAIL);
    } finally {
      await page.unroute("**/v1/logout");
    }
    // once the server is reached, the sign-out is done and said
    await page.getByRole("button", { name: "Sign out" }).click();
    await expect.poll(status).toBe("Signed out.");
    const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
    expect((await fetch(`${fx.origin}/v1/account`, { headers: { cookie } })).status).toBe(401);
    // signed in again for the tests after this one
    const signIns = () => outboxMails(outbox()).filter((m) => m.to === EMAIL && m.body.includes("#signin="));
    const before = signIns().length;
    expect((await fx.api("POST", "/v1/login", { email: EMAIL })).status).toBe(202);
    await eventually(() => signIns().length > before, 5_000, "the sign-in e-mail");
    // the newest: the outbox lists messages oldest first
    const link = /(http:\/\/\S+#signin=[A-Za-z0-9_-]+)/.exec(signIns().at(-1)?.body ?? "")?.[1];
    await page.goto((link as string).replace("http://127.0.0.1:0", fx.origin));
    await page.locator("h1", { hasText: "Your keys" }).waitFor();
  });

  it("sends a customer whose session ended back to sign in, in plain words, its header cleared", async () => {
    await page.goto(`${fx.origin}/#/keys`);
    await page.locator("h1", { hasText: "Your keys" }).waitFor();
    fx.advance(25 * 3_600_000);
    await page.locator("#get-key button[type=submit]").click();
    await expect.poll(status).toBe("Your session has ended. Sign in again to go on.");
    await expect.poll(() => page.locator("h1").textContent()).toBe("Sign up or sign in");
    expect(await page.locator("#account-email").textContent()).toBe("");
    expect(await page.locator("#account-nav").isHidden()).toBe(true);
  });
});
