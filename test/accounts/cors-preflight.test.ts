import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, needChromium } from "../support/browser.js";
import { mailTo } from "../support/outbox.js";
import { tokenIn } from "../support/smtp.js";
import { type AccountsFixture, type ApiAnswer, startAccounts } from "./helpers.js";

// The self-service API lets any origin read its answers (Access-Control-Allow-Origin: *; its callers prove
// themselves with a session token, never a cookie a page on another origin could ride: no answer allows
// credentials), so a customer's own web app can sign up, sign in and manage keys with it (docs/accounts.md).
// But a JSON body or an Authorization header makes the browser ask first (a CORS preflight: OPTIONS with
// Access-Control-Request-Method, Fetch standard §4.8), and the API answered that 405: Chromium then gave the
// page "Failed to fetch" for every call but a bodiless GET without a session. In Chromium, from a page on
// another origin (another port of loopback).

const EMAIL = "webapp@example.com";
const chromium = needChromium();

describe("the self-service API's answer to a CORS preflight", () => {
  let fx: AccountsFixture;

  beforeAll(async () => {
    fx = await startAccounts();
  });
  afterAll(async () => {
    await fx?.close();
  });

  const preflight = async (path: string, method: string, headers = "content-type, authorization") => {
    const answer = await request(`${fx.origin}${path}`, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example",
        "access-control-request-method": method,
        "access-control-request-headers": headers,
      },
    });
    await answer.body.dump();
    return answer;
  };

  it("grants the route's methods and the headers asked for, for a day, without credentials", async () => {
    const answer = await preflight("/v1/keys/7/settings", "PUT");
    expect(answer.statusCode).toBe(204);
    expect(answer.headers["access-control-allow-origin"]).toBe("*");
    expect(answer.headers["access-control-allow-methods"]).toBe("PUT");
    expect(answer.headers["access-control-allow-headers"]).toBe("content-type, authorization");
    expect(answer.headers["access-control-max-age"]).toBe("86400");
    expect(answer.headers["access-control-allow-credentials"]).toBeUndefined();
    expect((await preflight("/v1/keys", "GET")).headers["access-control-allow-methods"]).toBe("GET, HEAD");
  });

  it("grants no method the route does not take", async () => {
    const answer = await preflight("/v1/keys", "DELETE");
    expect(answer.headers["access-control-allow-methods"]).toBe("GET, HEAD");
  });

  it("still refuses an OPTIONS that is no preflight, naming the route's methods", async () => {
    const answer = await request(`${fx.origin}/v1/signup`, { method: "OPTIONS" });
    await answer.body.dump();
    expect(answer.statusCode).toBe(405);
    expect(answer.headers.allow).toBe("POST");
  });
});

describe.skipIf(chromium.skip)("a web app on another origin using the self-service API, in Chromium", () => {
  let fx: AccountsFixture;
  let site: Server;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    fx = await startAccounts();
    site = createServer((_req, res) =>
      res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>app</title>"),
    );
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    browser = await launchChromium();
    page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${(site.address() as AddressInfo).port}/`);
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => site?.close(resolve));
    await fx?.close();
  });

  /** The page's fetch of the API: its status and JSON body, or fetch's own failure. */
  const call = (method: string, path: string, body?: unknown, session?: string): Promise<ApiAnswer> =>
    page.evaluate(
      async ({ url, method, body, session }) => {
        const headers: Record<string, string> = {};
        if (body !== undefined) headers["content-type"] = "application/json";
        if (session !== undefined) headers.authorization = `Bearer ${session}`;
        try {
          const r = await fetch(url, {
            method,
            headers,
            ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          });
          return { status: r.status, json: await r.json() };
        } catch (error) {
          return { status: 0, json: `fetch failed: ${(error as Error).message}` };
        }
      },
      { url: `${fx.origin}${path}`, method, body, session },
    );

  it("signs up, signs in, gets a key and sets its origins with JSON bodies and a bearer session", async () => {
    const signup = await call("POST", "/v1/signup", { email: EMAIL });
    expect(signup.status).toBe(202);
    const token = tokenIn((await mailTo(join(fx.dir, "outbox"), EMAIL)).body);
    const confirmed = await call("POST", "/v1/confirm", { token });
    expect(confirmed.status).toBe(200);
    const session = confirmed.json.session as string;
    expect(typeof session).toBe("string");

    expect((await call("GET", "/v1/account", undefined, session)).json.account.email).toBe(EMAIL);
    const issued = await call("POST", "/v1/free-tests", { network: "eth" }, session);
    expect(issued.status).toBe(201);
    const id = issued.json.key.id as number;
    const settings = { origins: ["https://app.example"] };
    const set = await call("PUT", `/v1/keys/${id}/settings`, settings, session);
    expect(set.status).toBe(200);
    expect((await call("GET", "/v1/keys", undefined, session)).json.keys[0].id).toBe(id);
  });

  it("reads the API's refusals: a session required, an unknown route", async () => {
    const unsigned = await call("POST", "/v1/orders", { network: "eth", plan: "shared" });
    expect([unsigned.status, unsigned.json.error?.code]).toEqual([401, "SESSION_REQUIRED"]);
    const nowhere = await call("GET", "/v1/nowhere", undefined, "x".repeat(32));
    expect([nowhere.status, nowhere.json.error?.code]).toEqual([404, "API_ROUTE_NOT_FOUND"]);
  });
});
