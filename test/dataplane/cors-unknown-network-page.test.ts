import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type Browser, type Page, chromium as playwright } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM, needChromium } from "../support/browser.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// A dApp's page on another origin calls the gateway with fetch and a JSON body, which the browser sends only
// after a CORS preflight. Every refusal carries Access-Control-Allow-Origin so that the page reads why (the
// UNKNOWN_NETWORK of a mistyped network's host, say), but the preflight to a host that names no network was
// itself refused (404): Chromium then gave the page "Failed to fetch" and hid the answer. In Chromium, with
// the gateway's names resolved to loopback.

const chromium = needChromium();

describe.skipIf(chromium.skip)("a page's call to a host that names no network, in Chromium", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let site: Server;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_chainId: "0x1" }));
    gw = await startGateway({ upstreams: { eth: [node.url] } });
    site = createServer((_req, res) =>
      res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html>"),
    );
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    browser = await playwright.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        `--host-resolver-rules=MAP *.${DOMAIN} 127.0.0.1, MAP dapp.example 127.0.0.1`,
      ],
    });
    page = await browser.newPage();
    await page.goto(`http://dapp.example:${(site.address() as AddressInfo).port}/`);
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => site?.close(resolve));
    await gw?.close();
    await node?.close();
  });

  /** What the page's fetch of `url` gives it: the status and error code, or fetch's own failure. */
  const call = (url: string) =>
    page.evaluate(async (target) => {
      try {
        const r = await fetch(target, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
        });
        // the gateway's code: in a JSON-RPC error's data, or a REST error's own
        const body = (await r.json()) as { error?: { code: unknown; data?: { code: string } } };
        return `${r.status} ${body.error === undefined ? "answered" : (body.error.data?.code ?? body.error.code)}`;
      } catch (error) {
        return `fetch failed: ${(error as Error).message}`;
      }
    }, url);

  it("reads the gateway's UNKNOWN_NETWORK, as it reads a refused key's", async () => {
    expect(await call(`http://eth.${DOMAIN}:${gw.port}/${KEYS.all}`)).toBe("200 answered");
    expect(await call(`http://eth.${DOMAIN}:${gw.port}/FNnope000000000000000000`)).toBe("401 UNAUTHORIZED");
    expect(await call(`http://ethx.${DOMAIN}:${gw.port}/${KEYS.all}`)).toBe("404 UNKNOWN_NETWORK");
    expect(node.requests.filter((r) => r.body.includes("eth_chainId"))).toHaveLength(1);
  });
});
