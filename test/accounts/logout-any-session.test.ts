import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";
import { type AccountsFixture, startAccounts } from "./helpers.js";

// docs/accounts.md: "POST /v1/logout ends the session on the server and clears the cookies", whatever the
// account's status: a customer whose account was suspended (an unpaid bill) signs out on a shared computer,
// and that session must not come back when the account is reactivated; an expired session's HttpOnly cookie,
// which no page script can remove, is cleared too. A cookie session's sign-out still needs its CSRF header.
describe("signing out", () => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let n = 0;

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({}, smtp.port);
  });
  afterAll(async () => {
    await fx?.close();
    await smtp?.close();
  });

  /** A new account signed in from the dashboard: its id and the cookies its browser holds. */
  async function signedIn(): Promise<{ id: number; cookie: string; csrf: string }> {
    const email = `signed-in${n++}@example.com`;
    const confirmation = smtp.next(email);
    expect((await fx.api("POST", "/v1/signup", { email })).status).toBe(202);
    const answer = await request(`${fx.origin}/v1/confirm`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-gateway-client": "dashboard" },
      body: JSON.stringify({ token: tokenIn(await confirmation) }),
    });
    expect(answer.statusCode).toBe(200);
    await answer.body.dump();
    const cookies = ([] as string[]).concat(answer.headers["set-cookie"] ?? []);
    const account = await fx.accounts.store.accountByEmail(email);
    return {
      id: account?.id ?? 0,
      cookie: cookies.map((c) => c.split(";")[0]).join("; "),
      csrf: /gw_csrf=([^;]+)/.exec(cookies.join(";"))?.[1] ?? "",
    };
  }

  async function logout(headers: Record<string, string>) {
    const out = await request(`${fx.origin}/v1/logout`, {
      method: "POST",
      headers: { "x-gateway-client": "dashboard", ...headers },
    });
    const body = await out.body.text();
    const cleared = ([] as string[]).concat(out.headers["set-cookie"] ?? []).join("\n");
    return { status: out.statusCode, body, cleared };
  }

  async function keysStatus(cookie: string): Promise<number> {
    const answer = await request(`${fx.origin}/v1/keys`, { headers: { cookie } });
    await answer.body.dump();
    return answer.statusCode;
  }

  it("ends a suspended account's session, which stays ended once the account is reactivated", async () => {
    const { id, cookie, csrf } = await signedIn();
    await fx.accounts.service.admin.setStatus(id, "suspended");
    const out = await logout({ cookie, "x-csrf-token": csrf });
    expect(out.status).toBe(200);
    expect(out.cleared).toMatch(/gw_session=;.*Max-Age=0/);
    expect(out.cleared).toMatch(/gw_csrf=;.*Max-Age=0/);
    await fx.accounts.service.admin.setStatus(id, "active");
    expect(await keysStatus(cookie)).toBe(401);
  });

  it("ends a suspended account's session given as a bearer token", async () => {
    const email = `bearer${n++}@example.com`;
    const confirmation = smtp.next(email);
    await fx.api("POST", "/v1/signup", { email });
    const { json } = await fx.api("POST", "/v1/confirm", { token: tokenIn(await confirmation) });
    const session = json.session as string;
    const id = (await fx.accounts.store.accountByEmail(email))?.id ?? 0;
    await fx.accounts.service.admin.setStatus(id, "suspended");
    expect((await fx.api("POST", "/v1/logout", undefined, session)).status).toBe(200);
    await fx.accounts.service.admin.setStatus(id, "active");
    expect((await fx.api("GET", "/v1/keys", undefined, session)).status).toBe(401);
  });

  it("clears an expired session's cookies", async () => {
    const { cookie, csrf } = await signedIn();
    fx.advance(25 * 3_600_000);
    const out = await logout({ cookie, "x-csrf-token": csrf });
    expect(out.status).toBe(200);
    expect(out.cleared).toMatch(/gw_session=;.*Max-Age=0/);
  });

  it("still refuses a cookie session's sign-out without its CSRF header, and the session goes on", async () => {
    const { cookie } = await signedIn();
    const out = await logout({ cookie });
    expect(out.status).toBe(403);
    expect(out.body).toContain("CSRF_REFUSED");
    expect(out.cleared).toBe("");
    expect(await keysStatus(cookie)).toBe(200);
  });
});
