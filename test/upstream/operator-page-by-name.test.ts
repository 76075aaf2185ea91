import { type Browser, chromium as playwright } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_CONFIG, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { CHROMIUM, needChromium } from "../support/browser.js";
import { DOMAIN, TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// The operator API trusts whoever reaches its address, and docs/upstreams.md says a page an operator's
// browser has open can neither drive it nor read it: a cordon must be sent as application/json, which a
// page of another origin sends only after a preflight the API never grants. A page whose own name points
// at the API's address (DNS rebinding: a name of the attacker's that answers with 127.0.0.1 once the page
// has loaded) is of the API's origin to the browser: no preflight, and it took a node out of rotation. Here
// Chromium resolves such a name to loopback, as a rebound name does. (A page's GET of the same origin over
// plain HTTP carries no header that tells it from curl's: what /upstreams shows, names without credentials,
// stays readable so.)

const chromium = needChromium();

describe.skipIf(chromium.skip)("the operator API, from a page whose name points at its address", () => {
  let node: LoopbackNode;
  let proxy: RunningProxy;
  let browser: Browser;

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1" }));
    proxy = await runProxy(
      {
        ...DEFAULT_CONFIG,
        cache: { ...DEFAULT_CACHE, enabled: false },
        domain: DOMAIN,
        listen: { host: "127.0.0.1", port: 0 },
        operator: { listen: { host: "127.0.0.1", port: 0 } },
        keys: TEST_KEYS,
        upstreams: { eth: [{ url: node.url, name: "a" }] },
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 0 },
        log: { level: "info", access: false },
      },
      createLogger("info", () => {}),
    );
    browser = await playwright.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        "--host-resolver-rules=MAP rebound.test 127.0.0.1",
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await proxy?.close();
    await node?.close();
  });

  const state = async () => {
    const r = await fetch(`http://127.0.0.1:${proxy.operatorPort}/upstreams`);
    const { processes } = (await r.json()) as {
      processes: { labels: { label: string; upstreams: { name: string; state: string }[] }[] }[];
    };
    return processes[0]?.labels.find((l) => l.label === "eth")?.upstreams[0]?.state;
  };

  it("does not cordon a node for the page", async () => {
    const page = await browser.newPage();
    await page.goto(`http://rebound.test:${proxy.operatorPort}/`);
    const seen = await page.evaluate(async () => {
      const cordon = await fetch("/upstreams/cordon", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ label: "eth", upstream: "a" }),
      });
      return { status: cordon.status, body: await cordon.text() };
    });
    expect(await state()).not.toBe("cordoned");
    expect(seen.status).toBe(403);
    expect(JSON.parse(seen.body).error.code).toBe("OPERATOR_PAGE_REFUSED");
    // the operator's own tools, and the operator typing the address into the browser, still reach it
    const typed = await browser.newPage();
    const answer = await typed.goto(`http://127.0.0.1:${proxy.operatorPort}/upstreams`);
    expect(answer?.status()).toBe(200);
  });
});
