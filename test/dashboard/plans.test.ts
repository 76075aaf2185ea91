import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PLANS } from "../../src/config/defaults.js";
import type { GatewayConfig, PlanSpec } from "../../src/config/types.js";
import { freePort } from "../../src/dev/free-port.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { type AccountsFixture, proxyOnFixture, startAccountsFor } from "../accounts/helpers.js";
import { ROOT } from "../registry/helpers.js";
import { launchChromium, needChromium } from "../support/browser.js";
import { eventually } from "../support/eventually.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { mailTo } from "../support/outbox.js";

// The dashboard's overview and key settings in Chromium (docs/plans.md): the meters show what the usage API
// says against the plan's quotas, settings edited on the page hold on the next call, a wrong entry is named
// beside its field, nothing scrolls sideways on a phone, and axe finds no serious or critical violation.

const ARTIFACTS = join(ROOT, "test/artifacts/dashboard");
const EMAIL = "dora@example.com";
const chromium = needChromium();
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const PLANS: GatewayConfig["plans"] = {
  ...DEFAULT_PLANS,
  shared: { ...(DEFAULT_PLANS.shared as PlanSpec), dailyQuota: 1_000 },
  // a plan the operator added: the page offers it with no code
  growth: {
    ...(DEFAULT_PLANS.shared as PlanSpec),
    computeUnitRate: { perSecond: 5_000, burst: 10_000 },
    dailyQuota: 50_000_000,
    monthlyQuota: 0,
  },
};

describe.skipIf(chromium.skip)("the overview and key settings, in Chromium", () => {
  let fx: AccountsFixture;
  let node: LoopbackNode;
  let proxy: RunningProxy;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let port = 0;
  let key = "";
  let keyId = 0;

  const call = async (method: string) => {
    const answer = await request(`http://127.0.0.1:${port}/${key}`, {
      method: "POST",
      headers: { host: "eth.localhost", "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: [] }),
    });
    return { status: answer.statusCode, text: await answer.body.text() };
  };
  const heading = () => page.locator("h1").textContent();
  /** axe's serious and critical violations on the page, by rule. */
  const violations = async (p: Page) => {
    await p.addScriptTag({ content: AXE });
    const found = await p.evaluate<{ id: string; impact: string }[]>(
      "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact })))",
    );
    return found.filter((v) => v.impact === "serious" || v.impact === "critical");
  };

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    port = await freePort();
    fx = await startAccountsFor(port, PLANS);
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a", eth_chainId: "0x1" }));
    const config = proxyOnFixture(fx, port, node.url, { plans: PLANS });
    proxy = await runProxy(config, createLogger("silent"));
    browser = await launchChromium();
    // axe is put into the page as a script of its own: the dashboard's CSP would refuse it
    context = await browser.newContext({ viewport: { width: 1100, height: 900 }, bypassCSP: true });
    page = await context.newPage();
    // sign up and confirm with the e-mail's link: the browser holds the session
    expect((await fx.api("POST", "/v1/signup", { email: EMAIL })).status).toBe(202);
    const mail = (await mailTo(join(fx.dir, "outbox"), EMAIL)).body;
    const link = /(http:\/\/\S+#confirm=[A-Za-z0-9_-]+)/.exec(mail)?.[1] as string;
    await page.goto(link.replace("http://127.0.0.1:0", fx.origin));
    await page.locator("h1", { hasText: "Your keys" }).waitFor();
    const account = await fx.accounts.store.accountByEmail(EMAIL);
    const issued = await fx.accounts.service.keys.issue(account?.id ?? 0, {
      networks: ["eth"],
      plan: "shared",
    });
    key = issued.key;
    keyId = issued.view.id;
    // the proxy follows the store every 50 ms: a GET is refused after the key is known (405) and before
    // anything is charged, so it spends none of the quota
    const known = async () => {
      const answer = await request(`http://127.0.0.1:${port}/${key}`, { headers: { host: "eth.localhost" } });
      await answer.body.dump();
      return answer.statusCode === 405;
    };
    await eventually(known, 5_000, "the proxy knows the key");
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await proxy?.close();
    await node?.close();
    await fx?.close();
  });

  it("the overview's meters show what the usage API says, against the plan's daily quota", async () => {
    // 3 × eth_blockNumber (10 CU) + eth_chainId (5 CU) = 35 compute units (docs/compute-units.md)
    for (let i = 0; i < 3; i++) expect((await call("eth_blockNumber")).status).toBe(200);
    expect((await call("eth_chainId")).status).toBe(200);
    await page.goto(`${fx.origin}/#/overview`);
    await expect.poll(heading).toBe("Overview");
    const today = page.locator(`[data-key-id="${keyId}"] meter`).first();
    await expect
      .poll(
        async () => {
          await page.goto(`${fx.origin}/#/keys`);
          await page.goto(`${fx.origin}/#/overview`);
          return today.getAttribute("data-used");
        },
        { timeout: 5_000 },
      )
      .toBe("35");
    expect(await today.getAttribute("data-quota")).toBe("1000");
    const api = await page.evaluate<{ keys: { id: number; today: { units: number; calls: number } }[] }>(
      "fetch('/v1/overview', { headers: { 'x-gateway-client': 'dashboard' } }).then((r) => r.json())",
    );
    const mine = api.keys.find((k) => k.id === keyId);
    // and the GET that found the key known: a call, refused (405), of no compute units
    expect(mine?.today).toEqual({ calls: 5, units: 35 });
    expect(await page.locator(`[data-key-id="${keyId}"]`).textContent()).toContain("35 of 1,000 CU (4%)");
    expect(await page.locator("#dearest").textContent()).toContain("eth_blockNumber");
    // a label with its network's name, a plan by the name the plan list gives it
    expect(await page.locator("#latency").textContent()).toContain("eth (Ethereum)");
    expect(await page.locator(`#key-${keyId}`).textContent()).toMatch(/… Shared plan$/);
    // the refused GET, by its code and what the code means, and as a method no one would look up
    expect(await page.locator("#errors").textContent()).toContain(
      "HTTP_METHOD_NOT_ALLOWEDThe HTTP method is not allowed on this path1",
    );
    // refused at once, it took no node's time: counted, but not among the slowest methods
    expect(await page.locator("#slowest").textContent()).toContain("eth_blockNumber");
    expect(await page.locator("#slowest").textContent()).not.toContain("other (refused calls)");
    // each meter and link is named by its key, so a screen reader's list of them tells them apart
    const names = await page
      .locator("main meter, main a")
      .evaluateAll((all) => all.map((e) => e.getAttribute("aria-label") ?? e.textContent));
    expect(names.length).toBeGreaterThan(3);
    expect(new Set(names).size).toBe(names.length);
    expect(await today.getAttribute("aria-label")).toMatch(/^Today: compute units used by key FN\w+…$/);
    expect(await violations(page)).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, "overview.png"), fullPage: true });
  });

  it("offers the deployment's orderable plans with their terms, and the free test with its days", async () => {
    await page.goto(`${fx.origin}/#/keys`);
    await expect.poll(heading).toBe("Your keys");
    expect(await page.locator("#plan option").allTextContents()).toEqual([
      "Free test",
      "Shared",
      "Dedicated",
      "Growth",
    ]);
    // the chosen plan's terms beside the list
    const terms = () => page.locator("#plan-terms").textContent();
    // the free test's own quota too, from the deployment's free-test plan
    expect(await terms()).toBe(
      "Free for 7 days, with 400 CU a second, 1,000,000 CU a day; then the key expires.",
    );
    const expected = {
      shared: "2,000 CU a second, 1,000 CU a day, 200,000,000 CU a month, archive nodes.",
      dedicated: "20,000 CU a second, no quota, archive nodes.",
      growth: "5,000 CU a second, 50,000,000 CU a day, archive nodes.",
    };
    for (const [name, text] of Object.entries(expected)) {
      await page.locator("#plan").selectOption(name);
      expect(await terms()).toBe(text);
    }
    // the free test is not orderable: it has its own option and its own API
    expect(
      await page.locator("#plan option").evaluateAll((o) => o.map((e) => e.getAttribute("value"))),
    ).toEqual(["free-test", "shared", "dedicated", "growth"]);
  });

  it("settings edited on the page hold on the next call; a wrong entry is named beside its field", async () => {
    await page.goto(`${fx.origin}/#/keys/${keyId}/settings`);
    await expect.poll(heading).toContain("Settings of");
    await page.getByLabel("Allowed methods").fill("eth_blockNumber");
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect.poll(() => page.locator("#status").textContent()).toContain("Settings saved");
    await expect.poll(async () => (await call("eth_chainId")).status, { timeout: 3_000 }).toBe(403);
    expect((await call("eth_chainId")).text).toContain("KEY_SETTING_REFUSED");
    expect((await call("eth_blockNumber")).status).toBe(200);
    // the line it is on, blank lines counted
    await page.getByLabel("Allowed client IPs").fill("10.0.0.0/8\n\nnowhere");
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect.poll(() => page.locator("#settings-problem").textContent()).toContain("Line 3, “nowhere”");
    expect(await page.evaluate<string>("document.activeElement.id")).toBe("setting-ips");
    // said under its field, which it describes, and the earlier save's message is gone
    expect(
      await page.evaluate<string>("document.querySelector('#setting-ips + #settings-problem')?.id"),
    ).toBe("settings-problem");
    expect(await page.locator("#setting-ips").getAttribute("aria-describedby")).toContain("settings-problem");
    expect(await page.locator("#status").textContent()).toBe("");
    expect(await violations(page)).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, "settings.png"), fullPage: true });
    // a JWT key the API refuses is named by its place among the keys, not as an object
    await page.getByLabel("Allowed client IPs").fill("");
    await page
      .getByLabel("JWT public keys")
      .fill("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----");
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect.poll(() => page.locator("#settings-problem").textContent()).toContain("Key 1: not");
    expect(await page.locator("#settings-problem").textContent()).not.toContain("[object");
    await page.getByLabel("JWT public keys").fill("");
    // nothing was changed by the refused save
    expect((await call("eth_blockNumber")).status).toBe(200);
    // a list over its size names the list, not an entry
    const many = Array.from({ length: 31 }, (_, i) => `10.0.0.${i}`).join("\n");
    await page.getByLabel("Allowed client IPs").fill(many);
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect
      .poll(() => page.locator("#settings-problem").textContent())
      .toBe("The list must be a list of at most 30 entries.");
    await page.getByLabel("Allowed client IPs").fill("");
    // PKCS#1's RSA PUBLIC KEY (openssl rsa -RSAPublicKey_out) and SPKI alike, each kept with its id
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey;
    const ec = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).publicKey;
    const pkcs1 = rsa.export({ type: "pkcs1", format: "pem" }).toString().trim();
    const spki = ec.export({ type: "spki", format: "pem" }).toString().trim();
    await page.getByLabel("JWT public keys").fill(`id: app-1\n${pkcs1}\n\n${spki}`);
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect.poll(() => page.locator("#status").textContent()).toContain("Settings saved");
    await page.reload();
    await expect.poll(() => page.getByLabel("JWT public keys").inputValue()).toContain("id: app-1");
    const shown = await page.getByLabel("JWT public keys").inputValue();
    expect(shown).toContain("BEGIN RSA PUBLIC KEY");
    expect(shown).toContain("BEGIN PUBLIC KEY");
    // saved again from the page, the id stays
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect.poll(() => page.locator("#status").textContent()).toContain("Settings saved");
    await page.reload();
    await expect.poll(() => page.getByLabel("JWT public keys").inputValue()).toContain("id: app-1");
    // anything else in the field is said, not dropped
    await page.getByLabel("JWT public keys").fill(`${spki}\nsomething else`);
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect
      .poll(() => page.locator("#settings-problem").textContent())
      .toContain("Paste public keys in PEM");
    await page.getByLabel("JWT public keys").fill("");
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect.poll(() => page.locator("#status").textContent()).toContain("Settings saved");
  });

  it("fits a phone-sized screen: no sideways scroll on the overview or the settings", async () => {
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    for (const [hash, title] of [
      ["#/overview", "Overview"],
      [`#/keys/${keyId}/settings`, "Settings of"],
    ] as const) {
      await phone.goto(`${fx.origin}/${hash}`);
      await expect.poll(() => phone.locator("h1").textContent()).toContain(title);
      expect(await phone.evaluate<number>("document.documentElement.scrollWidth"), hash).toBeLessThanOrEqual(
        390,
      );
    }
    await phone.screenshot({ path: join(ARTIFACTS, "settings-phone.png"), fullPage: true });
    await phone.close();
  });
});
