import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/dev/free-port.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import {
  type AccountsFixture,
  proxyOnFixture,
  startAccounts,
  startAccountsFor,
} from "../accounts/helpers.js";
import { ROOT } from "../registry/helpers.js";
import { launchChromium, needChromium } from "../support/browser.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { quotedPrintable } from "../support/outbox.js";

// The customer's path through the dashboard in a real browser (Debian's Chromium, driven by playwright-core):
// sign up, confirm from the outbox, request a free test, read the key from the e-mail, call the gateway with
// the copied endpoint, see the call in the usage chart, rotate, revoke, and see the revoked key refused.
// Screenshots of each page go to test/artifacts/dashboard/.

const ARTIFACTS = join(ROOT, "test/artifacts/dashboard");
const EMAIL = "carol@example.com";
const chromium = needChromium();

describe.skipIf(chromium.skip)("the dashboard, in Chromium", () => {
  let fx: AccountsFixture;
  let node: LoopbackNode;
  let proxy: RunningProxy;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let port = 0;
  let key = "";
  const mails = () =>
    readdirSync(join(fx.dir, "outbox"))
      .sort()
      .map((f) => quotedPrintable(readFileSync(join(fx.dir, "outbox", f), "utf8")))
      .filter((m) => m.includes(EMAIL));
  const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  const status = () => page.locator("#status").textContent();
  /** The words of a table's cells that the layout broke across lines (a word's range drawn in two boxes). */
  const brokenWords = (table: string) =>
    page.evaluate<string[]>(`[...document.querySelectorAll("${table} th, ${table} td")].flatMap((cell) => {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      const broken = [];
      for (let text = walker.nextNode(); text !== null; text = walker.nextNode()) {
        for (const word of text.data.matchAll(/\\S+/g)) {
          const range = document.createRange();
          range.setStart(text, word.index);
          range.setEnd(text, word.index + word[0].length);
          if (new Set([...range.getClientRects()].map((box) => Math.round(box.top))).size > 1) broken.push(word[0]);
        }
      }
      return broken;
    })`);
  /** Calls eth_blockNumber at `url` (the page's endpoint, with the key put in), over loopback with its Host. */
  const callAt = async (url: string) => {
    const target = new URL(url);
    const answer = await request(`http://127.0.0.1:${port}${target.pathname}`, {
      method: "POST",
      headers: { host: target.host, "content-type": "application/json" },
      body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
    });
    return { status: answer.statusCode, json: (await answer.body.json()) as { result?: string } };
  };

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    port = await freePort();
    fx = await startAccountsFor(port);
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a" }));
    const config = proxyOnFixture(fx, port, node.url);
    proxy = await runProxy(config, createLogger("silent"));
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    page = await context.newPage();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await proxy?.close();
    await node?.close();
    await fx?.close();
  });

  it("signs up, and says where the confirmation went", async () => {
    // a first visit asks nothing the server refuses: no red 401 in the visitor's console
    const refused: string[] = [];
    page.on("response", (r) => {
      if (r.status() >= 400) refused.push(`${r.status()} ${r.url()}`);
    });
    await page.goto(fx.origin);
    // signed out, the header offers no "Sign out"
    await expect.poll(() => page.getByLabel("E-mail address").count()).toBe(1);
    expect(refused).toEqual([]);
    page.removeAllListeners("response");
    expect(await page.locator("#sign-out").isVisible()).toBe(false);
    // what a visitor gets, from the catalog: every network by name, and the free test's days
    const catalog = await page.evaluate<{ networks: { name: string }[] }>(
      "fetch('/v1/networks').then((r) => r.json())",
    );
    const offer = (await page.locator("#offer").textContent()) ?? "";
    expect(offer).toContain(`One API key for the nodes of ${catalog.networks.length} networks`);
    for (const { name } of catalog.networks) expect(offer).toContain(name);
    expect(offer).toContain("free for 7 days, then choose a plan: shared or dedicated.");
    await shot("sign-in");
    // by keyboard alone: Tab from the page's start reaches the labelled field, Enter submits the sign-up
    await expect.poll(() => page.getByLabel("E-mail address").count()).toBe(1);
    for (let i = 0; i < 5 && (await page.evaluate<string>("document.activeElement.id")) !== "email"; i++)
      await page.keyboard.press("Tab");
    expect(await page.evaluate<string>("document.activeElement.id")).toBe("email");
    await page.keyboard.type(EMAIL);
    await page.keyboard.press("Tab");
    expect(await page.evaluate<string>("document.activeElement.textContent")).toBe("Sign up");
    await page.keyboard.press("Enter");
    await expect.poll(status).toContain("outbox");
    // never where on the server
    expect(await status()).not.toContain(fx.dir);
    expect(mails()).toHaveLength(1);
  });

  it("confirms with the link from the e-mail and lands on an empty key list", async () => {
    const link = /(http:\/\/\S+#confirm=[A-Za-z0-9_-]+)/.exec(mails()[0] ?? "")?.[1];
    expect(link).toBeDefined();
    // The store's fixture listens on any port; a deployment names its address in accounts.publicUrl.
    await page.goto((link as string).replace("http://127.0.0.1:0", fx.origin));
    await expect.poll(() => page.locator("h1").textContent()).toBe("Your keys");
    expect(await page.locator("#account-email").textContent()).toBe(EMAIL);
    // the session is in an HttpOnly cookie the page cannot read
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name === "gw_session")).toMatchObject({
      httpOnly: true,
      sameSite: "Strict",
    });
    expect(await page.evaluate<string>("document.cookie")).not.toContain("gw_session");
  });

  it("a confirmation link used once already says so, on the sign-in page, never on Loading…", async () => {
    const link = /(http:\/\/\S+#confirm=[A-Za-z0-9_-]+)/.exec(mails()[0] ?? "")?.[1] as string;
    const again = await browser.newPage();
    try {
      await again.goto(link.replace("http://127.0.0.1:0", fx.origin));
      await expect.poll(() => again.locator("[role=alert]").textContent()).toContain("already used");
      expect(await again.locator("h1").textContent()).toBe("Sign up or sign in");
      expect(await again.getByLabel("E-mail address").count()).toBe(1);
      // a link cut short is the same. The first link's alert says "not a whole link" too: it goes first, so
      // that the wait is for the page this link renders, whose form the next steps fill (filled before that
      // render, the form was replaced and its token lost)
      await again.evaluate("document.querySelector('[role=alert]').remove()");
      await again.goto(`${fx.origin}/#confirm=${"x".repeat(20)}`);
      await expect.poll(() => again.locator("[role=alert]").textContent()).toContain("not a whole link");
      // a token pasted wrong is spoken of as a token, not a link
      await again.getByLabel("Have a token from the e-mail? Paste it here").fill("y".repeat(20));
      await again.getByRole("button", { name: "Continue" }).click();
      await expect
        .poll(() => again.locator("#status").textContent())
        .toContain("This token was already used, or it is not the whole token from the e-mail.");
    } finally {
      await again.close();
    }
  });

  it("the same link opened again where its customer is signed in goes on to their keys, saying why", async () => {
    const link = /(http:\/\/\S+#confirm=[A-Za-z0-9_-]+)/.exec(mails()[0] ?? "")?.[1] as string;
    await page.goto(link.replace("http://127.0.0.1:0", fx.origin));
    await expect.poll(() => page.locator("main [role=status]").textContent()).toContain("signed in already");
    expect(await page.locator("h1").textContent()).toBe("Your keys");
    expect(await page.locator("#account-email").textContent()).toBe(EMAIL);
  });

  it("requests a free test for eth; the key arrives by e-mail and never on the page", async () => {
    await page.getByLabel("Network").selectOption("eth");
    await page.getByLabel("Plan").selectOption("free-test");
    await page.getByRole("button", { name: "Send me the key" }).click();
    await expect.poll(status).toContain("sent to");
    key = /\b(FN[A-Za-z0-9]{32})\b/.exec(mails().at(-1) ?? "")?.[1] ?? "";
    expect(key).not.toBe("");
    const row = page.locator("#keys tbody tr");
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.first().textContent()).toContain(key.slice(0, 10));
    // what the key can do, honestly: a free test's rate (accounts.freeTest.rate)
    expect(await row.first().textContent()).toContain("40 calls/s, bursts of 80");
    // its plan by the name the plan list gives it, not the plan's id
    expect(await row.first().locator("td").nth(1).textContent()).toMatch(/^Free test/);
    expect(await page.content()).not.toContain(key);
    // on a desktop screen every word of the table stays whole: "Networks", "active", "Ethereum"
    expect(await brokenWords("#keys")).toEqual([]);
    await shot("keys");
  });

  it("copies the endpoint, and the gateway answers a call made with it", async () => {
    await page.getByRole("link", { name: "Endpoints" }).click();
    await expect.poll(() => page.locator("h1").textContent()).toContain("Endpoints of");
    // What the button puts on the clipboard, caught at the clipboard API: a headless browser has no desktop
    // clipboard to read back.
    await page.evaluate(
      "window.copied = []; navigator.clipboard.writeText = async (text) => { window.copied.push(text); };",
    );
    await page.getByRole("button", { name: "Copy eth HTTP URL", exact: true }).click();
    const copied = await page.evaluate<string>("window.copied[0]");
    expect(await status()).toBe("Copied the eth HTTP URL.");
    expect(copied).toBe(`http://eth.localhost:${port}/YOUR_API_KEY/`);
    expect(await page.locator("pre").first().textContent()).toContain("eth_blockNumber");
    // the SDK snippet comes from the registry's example for the interface, with the URL put in
    expect(await page.locator("pre.sdk").first().textContent()).toContain(
      `http: http://eth.localhost:${port}/YOUR_API_KEY/`.replace("http: ", 'http("').concat('")'),
    );
    const answer = await callAt(copied.replace("YOUR_API_KEY", key));
    expect(answer).toEqual({ status: 200, json: { jsonrpc: "2.0", id: 1, result: "0x2a" } });
    await shot("endpoints");
  });

  it("shows the call in the usage chart", async () => {
    const id = await page.evaluate<string>('location.hash.split("/")[2]');
    // the proxy adds its counts to the store once per flush interval (200 ms here): ask the API the page
    // reads, with the page's own session, until the call is there
    const calls = `fetch("/v1/keys/${id}/usage").then((r) => r.json()).then((usage) => usage.total.calls)`;
    await expect.poll(() => page.evaluate<number>(calls), { timeout: 5_000 }).toBe(1);
    await page.goto(`${fx.origin}/#/keys/${id}/usage`);
    await expect.poll(() => page.locator("#usage tbody tr").count()).toBe(1);
    expect(await page.locator("#usage tbody tr td").allTextContents()).toEqual([
      new Date().toISOString().slice(0, 10),
      "eth (Ethereum)", // the label the URLs use, and its network's name
      "1",
      "10", // compute units: eth_blockNumber's (docs/compute-units.md)
      "0",
    ]);
    expect(await page.locator(".chart svg").getAttribute("aria-label")).toContain("1 call, 0 errors");
    expect(await page.locator("main > p").first().textContent()).toContain(": 1 call, 10 CU, 0 errors.");
    // every label inside the chart's box: the last day's ran past its right edge
    const outside = await page.evaluate<string[]>(`(() => {
      const svg = document.querySelector(".chart svg");
      const box = svg.viewBox.baseVal;
      return [...svg.querySelectorAll("text")]
        .filter((t) => { const b = t.getBBox(); return b.x < box.x || b.x + b.width > box.x + box.width; })
        .map((t) => t.textContent);
    })()`);
    expect(outside).toEqual([]);
    await shot("usage");
    // a key that is not the account's says so, as its other pages do, never "Loading…"
    await page.goto(`${fx.origin}/#/keys/999999/usage`);
    await expect.poll(() => page.locator("h1").textContent()).toBe("No such key");
  });

  it("rotates with a confirmation, then revokes; the revoked key is refused by the gateway", async () => {
    await page.goto(`${fx.origin}/#/keys`);
    page.once("dialog", (dialog) => void dialog.accept());
    await page.getByRole("button", { name: "Rotate" }).click();
    await expect.poll(status).toContain("grace period");
    const rotated = /\b(FN[A-Za-z0-9]{32})\b/.exec(mails().at(-1) ?? "")?.[1] ?? "";
    expect(rotated).not.toBe(key);
    await expect.poll(() => page.locator("#keys tbody tr").count()).toBe(2);
    expect(await page.locator("#keys").textContent()).toContain("rotation grace period");
    // the old key, in its grace period, has its successor: only the new one offers a rotation
    const old = page.locator("#keys tbody tr", { hasText: key.slice(0, 10) });
    expect(await old.getByRole("button", { name: /Rotate/ }).count()).toBe(0);

    const row = page.locator("#keys tbody tr", { hasText: rotated.slice(0, 10) });
    page.once("dialog", (dialog) => void dialog.accept());
    await row.getByRole("button", { name: "Revoke" }).click();
    await expect.poll(status).toContain("revoked");
    expect(await row.locator(".key-status").textContent()).toBe("revoked");
    let refused = 0;
    for (let i = 0; i < 50 && refused !== 401; i++) {
      refused = (await callAt(`http://eth.localhost:${port}/${rotated}/`)).status;
      if (refused !== 401) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(refused).toBe(401);
    expect(await page.content()).not.toContain(rotated);
    // the old key, revoked in its grace period (it leaked, say), says revoked: not "active until"
    page.once("dialog", (dialog) => void dialog.accept());
    await old.getByRole("button", { name: "Revoke" }).click();
    await expect.poll(() => old.locator(".key-status").textContent()).toBe("revoked");
    expect(await old.textContent()).not.toContain("active");
  });

  it("fits a phone-sized screen: nothing scrolls sideways, the key and usage tables included", async () => {
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    // the page, and any element that could scroll inside it
    const sideways = () =>
      phone.evaluate<string[]>(`[
        ...(document.documentElement.scrollWidth > 390 ? ["the page: " + document.documentElement.scrollWidth] : []),
        ...[...document.querySelectorAll("main *")]
          .filter((e) => e.scrollWidth > e.clientWidth + 1 && ["auto", "scroll"].includes(getComputedStyle(e).overflowX))
          .map((e) => e.tagName + "." + e.className + ": " + e.scrollWidth + " > " + e.clientWidth),
      ]`);
    for (const [hash, title] of [
      ["#/keys", "Your keys"],
      ["#/usage", "Usage of all your keys"],
    ]) {
      await phone.goto(`${fx.origin}/${hash}`);
      await expect.poll(() => phone.locator("h1").textContent()).toBe(title);
      expect(await sideways(), hash).toEqual([]);
    }
    // each cell says which column it is, since the table's head is not shown
    await phone.goto(`${fx.origin}/#/keys`);
    await expect.poll(() => phone.locator("h1").textContent()).toBe("Your keys");
    expect(await phone.locator("#keys td").first().getAttribute("data-label")).toBe("Key");
    await phone.screenshot({ path: join(ARTIFACTS, "keys-phone.png"), fullPage: true });
    await phone.close();
  });

  it("signs out: the header forgets the account and offers no sign-out", async () => {
    await page.goto(`${fx.origin}/#/keys`);
    await expect.poll(() => page.locator("#account-email").textContent()).toBe(EMAIL);
    await page.getByRole("button", { name: "Sign out" }).click();
    await expect.poll(status).toBe("Signed out.");
    expect(await page.locator("#account-email").textContent()).toBe("");
    expect(await page.locator("#sign-out").isVisible()).toBe(false);
  });

  it("a visitor past the sign-in rate is told how long to wait", async () => {
    // a deployment of one sign-up or sign-in an IP a while
    const strict = await startAccounts({ signupRatePerIp: { perSecond: 1 / 600, burst: 1 } });
    try {
      await page.goto(strict.origin);
      await expect.poll(() => page.getByLabel("E-mail address").count()).toBe(1);
      await page.getByLabel("E-mail address").fill(EMAIL);
      await page.getByRole("button", { name: "Sign in" }).click();
      await expect.poll(status).toContain("Sign-in e-mail sent");
      await page.getByRole("button", { name: "Sign in" }).click();
      await expect.poll(status).toMatch(/^Request rate limit exceeded\. Try again in 10 minutes\.$/);
    } finally {
      await strict.close();
    }
  });
});
