import { readFileSync } from "node:fs";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AccountsFixture, startAccounts } from "../accounts/helpers.js";
import { ROOT } from "../registry/helpers.js";
import { keyIn, type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";

// The dashboard's security, without a browser: its headers, its cookies, and a state change refused without
// the CSRF token.

describe("the dashboard's security", () => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let cookies: string[] = [];
  let keyId = 0;
  const cookieHeader = () => cookies.map((c) => c.split(";")[0]).join("; ");
  const csrf = () => /gw_csrf=([^;]+)/.exec(cookies.join(";"))?.[1] ?? "";
  const post = (path: string, headers: Record<string, string>) =>
    request(`${fx.origin}${path}`, { method: "POST", headers }).then(async (r) => ({
      status: r.statusCode,
      json: (await r.body.json()) as { error?: { code: string } },
    }));

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({}, smtp.port);
    const email = "dave@example.com";
    const confirmation = smtp.next(email);
    await fx.api("POST", "/v1/signup", { email });
    const answer = await request(`${fx.origin}/v1/confirm`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-gateway-client": "dashboard" },
      body: JSON.stringify({ token: tokenIn(await confirmation) }),
    });
    cookies = ([] as string[]).concat(answer.headers["set-cookie"] ?? []);
    expect(answer.statusCode).toBe(200);
    // a dashboard session is in the cookie only: the body carries no token a script could read
    expect(await answer.body.json()).not.toHaveProperty("session");
    const mail = smtp.next(email);
    const order = await request(`${fx.origin}/v1/orders`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        cookie: cookieHeader(),
        "x-csrf-token": csrf(),
      },
      body: JSON.stringify({ network: "eth" }),
    });
    expect(order.statusCode).toBe(201);
    keyId = ((await order.body.json()) as { key: { id: number } }).key.id;
    keyIn(await mail);
  });
  afterAll(async () => {
    await fx?.close();
    await smtp?.close();
  });

  it("serves the page with a strict Content-Security-Policy and no inline script", async () => {
    const page = await request(`${fx.origin}/`);
    const html = await page.body.text();
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-security-policy"]).toContain("default-src 'none'");
    expect(page.headers["content-security-policy"]).toContain("script-src 'self'");
    expect(page.headers["content-security-policy"]).not.toContain("unsafe-inline");
    expect(page.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(page.headers["x-content-type-options"]).toBe("nosniff");
    expect(page.headers["x-frame-options"]).toBe("DENY");
    expect(page.headers["referrer-policy"]).toBe("no-referrer");
    // every script has a src; no event-handler attributes, no style attributes
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\son[a-z]+=/i);
    expect(html).not.toMatch(/\sstyle=/i);
    const api = await request(`${fx.origin}/v1/networks`);
    expect(api.headers["content-security-policy"]).toContain("default-src 'none'");
    expect(api.headers["cache-control"]).toBe("no-store");
    await api.body.dump();
  });

  it("answers a browser's mistyped address with a page that leads to the dashboard, a program's with JSON", async () => {
    const page = await request(`${fx.origin}/keys/settings`, { headers: { accept: "text/html,*/*;q=0.8" } });
    const html = await page.body.text();
    expect(page.statusCode).toBe(404);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.headers["content-security-policy"]).toContain("default-src 'none'");
    expect(html).toContain("<h1>Page not found</h1>");
    expect(html).toContain('<a href="/">Go to the dashboard</a>');
    expect(html).not.toMatch(/<script|\sstyle=/i);
    const program = await request(`${fx.origin}/keys/settings`, { headers: { accept: "application/json" } });
    expect(program.statusCode).toBe(404);
    expect(((await program.body.json()) as { error: { code: string } }).error.code).toBe(
      "API_ROUTE_NOT_FOUND",
    );
    // the API's own paths stay JSON, whatever the client accepts
    const api = await request(`${fx.origin}/v1/nothing`, { headers: { accept: "text/html" } });
    expect(((await api.body.json()) as { error: { code: string } }).error.code).toBe("API_ROUTE_NOT_FOUND");
  });

  it("holds the session in an HttpOnly, SameSite=Strict cookie", () => {
    const session = cookies.find((c) => c.startsWith("gw_session="));
    expect(session).toMatch(/; HttpOnly/);
    expect(session).toMatch(/; SameSite=Strict/);
    expect(cookies.find((c) => c.startsWith("gw_csrf="))).toMatch(/; SameSite=Strict/);
  });

  it("refuses a cookie-authenticated state change without the CSRF token, or with a wrong one", async () => {
    const without = await post(`/v1/keys/${keyId}/revoke`, { cookie: cookieHeader() });
    expect(without.status).toBe(403);
    expect(without.json.error?.code).toBe("CSRF_REFUSED");
    const wrong = await post(`/v1/keys/${keyId}/revoke`, {
      cookie: cookieHeader(),
      "x-csrf-token": "x".repeat(32),
    });
    expect(wrong.json.error?.code).toBe("CSRF_REFUSED");
    // nothing changed
    const list = await request(`${fx.origin}/v1/keys`, { headers: { cookie: cookieHeader() } });
    expect(((await list.body.json()) as { keys: { status: string }[] }).keys[0]?.status).toBe("active");
    const right = await post(`/v1/keys/${keyId}/revoke`, { cookie: cookieHeader(), "x-csrf-token": csrf() });
    expect(right.status).toBe(200);
  });

  it("signs out: the session stops working and its cookies are cleared", async () => {
    const out = await request(`${fx.origin}/v1/logout`, {
      method: "POST",
      headers: { cookie: cookieHeader(), "x-csrf-token": csrf() },
    });
    expect(out.statusCode).toBe(200);
    expect(([] as string[]).concat(out.headers["set-cookie"] ?? []).join("\n")).toMatch(
      /gw_session=; .*Max-Age=0/,
    );
    await out.body.dump();
    const after = await request(`${fx.origin}/v1/keys`, { headers: { cookie: cookieHeader() } });
    expect(after.statusCode).toBe(401);
    await after.body.dump();
  });

  it("writes text in colours that keep WCAG AA contrast (4.5:1) on its white background", () => {
    const css = readFileSync(join(ROOT, "src/control/dashboard/assets/app.css"), "utf8");
    const luminance = (hex: string) => {
      const [r, g, b] = [1, 3, 5].map((i) => {
        const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
        return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
      }) as [number, number, number];
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const contrast = (hex: string) => 1.05 / (luminance(hex) + 0.05);
    for (const name of ["fg", "muted", "accent", "bad"]) {
      const hex = new RegExp(`--${name}: (#[0-9a-f]{6})`).exec(css)?.[1];
      expect(hex, name).toBeDefined();
      expect(contrast(hex as string), name).toBeGreaterThanOrEqual(4.5);
    }
  });

  it("has no script that writes markup from data", () => {
    const app = readFileSync(join(ROOT, "src/control/dashboard/assets/app.js"), "utf8");
    expect(app).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/);
  });
});
