import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/dev/free-port.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { type AccountsFixture, proxyOnFixture, startAccountsFor } from "../accounts/helpers.js";
import { launchChromium, needChromium } from "../support/browser.js";
import { eventually } from "../support/eventually.js";
import {
  answeringAfter,
  jsonRpcResponder,
  type LoopbackNode,
  startLoopbackNode,
} from "../support/loopback-node.js";
import { mailTo } from "../support/outbox.js";

// The overview's gateway times (docs/accounts.md, GET /v1/overview): calls the gateway refused at once, by
// a rate, a quota or a key's setting, are counted but not timed. A batch's calls refused on their own by the
// key's method list were timed at the whole batch's time: "other (refused calls)" led the page's "Slowest
// methods", and the network's p50/p95 counted them. In Chromium, as the customer reads it.

const EMAIL = "gil@example.com";
const chromium = needChromium();

describe.skipIf(chromium.skip)("a batch's calls refused by the key's settings, on the overview", () => {
  let fx: AccountsFixture;
  let node: LoopbackNode;
  let proxy: RunningProxy;
  let browser: Browser;
  let page: Page;
  let port = 0;

  beforeAll(async () => {
    port = await freePort();
    fx = await startAccountsFor(port);
    // the node takes a while to answer, as a node does: the batch's time is its node's
    node = await startLoopbackNode(answeringAfter(120, jsonRpcResponder({ eth_blockNumber: "0x2a" })));
    proxy = await runProxy(proxyOnFixture(fx, port, node.url), createLogger("silent"));
    browser = await launchChromium();
    page = await browser.newPage();
    expect((await fx.api("POST", "/v1/signup", { email: EMAIL })).status).toBe(202);
    const link = /(http:\/\/\S+#confirm=[A-Za-z0-9_-]+)/.exec(
      (await mailTo(join(fx.dir, "outbox"), EMAIL)).body,
    )?.[1];
    await page.goto((link as string).replace("http://127.0.0.1:0", fx.origin));
    await page.locator("h1", { hasText: "Your keys" }).waitFor();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await proxy?.close();
    await node?.close();
    await fx?.close();
  });

  it("counts them, and times only the calls a node answered", async () => {
    const account = await fx.accounts.store.accountByEmail(EMAIL);
    const { key, view } = await fx.accounts.service.keys.issue(account?.id ?? 0, {
      networks: ["eth"],
      plan: "shared",
    });
    await fx.accounts.service.keys.updateSettings(account as NonNullable<typeof account>, view.id, {
      methods: ["eth_blockNumber"],
    });
    const send = async (body: unknown) => {
      const answer = await request(`http://127.0.0.1:${port}/${key}`, {
        method: "POST",
        headers: { host: "eth.localhost", "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: answer.statusCode, text: await answer.body.text() };
    };
    const call = (method: string, id: number) => ({ jsonrpc: "2.0", id, method, params: [] });
    // the proxy follows the store every 50 ms: a call alone that the list refuses says it knows the settings
    await eventually(
      async () => (await send(call("eth_chainId", 1))).text.includes("KEY_SETTING_REFUSED"),
      5_000,
      "the key's settings applied",
    );
    const batch = await send([call("eth_blockNumber", 1), call("eth_chainId", 2), call("eth_gasPrice", 3)]);
    expect(batch.status).toBe(200);
    expect(batch.text.match(/KEY_SETTING_REFUSED/g)).toHaveLength(2);
    type Overview = {
      slowest: { method: string; calls: number }[];
      latency: { calls: number }[];
      dearest: { method: string; calls: number }[];
    };
    const overview = () =>
      page.evaluate<Overview>(
        "fetch('/v1/overview', { headers: { 'x-gateway-client': 'dashboard' } }).then((r) => r.json())",
      );
    await eventually(async () => (await overview()).dearest.length > 0, 5_000, "the usage flushed");
    const o = await overview();
    // one call a node answered (its batch's 120 ms and more); the two refused beside it took no node's time
    expect(o.dearest).toEqual([expect.objectContaining({ method: "eth_blockNumber", calls: 1 })]);
    expect(o.latency.map((l) => l.calls)).toEqual([1]);
    expect(o.slowest.map((m) => m.method)).toEqual(["eth_blockNumber"]);
    await page.goto(`${fx.origin}/#/overview`);
    await page.locator("#slowest").waitFor();
    expect(await page.locator("#slowest").textContent()).not.toContain("refused calls");
  });
});
