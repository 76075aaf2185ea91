import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyIn, type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";
import { type AccountsFixture, STORES, startAccounts } from "./helpers.js";

// Each row gets a clear error, and nothing changes in the store (its change feed and accounts compared).
describe.each(STORES)("self-service API bad input (%s store)", (store) => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let alice = "";
  let bobKeyId = 0;
  let expiredToken = "";

  const snapshot = async () =>
    JSON.stringify([await fx.accounts.store.changesSince(0), await fx.accounts.store.listAccounts()]);

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({ confirmTokenHours: 1 }, smtp.port, store);
    for (const email of ["alice@example.com", "bob@example.com"]) {
      const mail = smtp.next(email);
      await fx.api("POST", "/v1/signup", { email });
      const session = (await fx.api("POST", "/v1/confirm", { token: tokenIn(await mail) })).json
        .session as string;
      if (email.startsWith("alice")) alice = session;
      else {
        const keyMail = smtp.next(email);
        bobKeyId = (await fx.api("POST", "/v1/orders", { network: "eth" }, session)).json.key.id;
        keyIn(await keyMail);
      }
    }
    // a pending account whose confirmation token will have expired
    const mail = smtp.next("late@example.com");
    await fx.api("POST", "/v1/signup", { email: "late@example.com" });
    expiredToken = tokenIn(await mail);
    fx.advance(2 * 3_600_000);
  });
  afterAll(async () => {
    await fx?.close();
    await smtp?.close();
  });

  const rows: [
    string,
    () => [method: "GET" | "POST", path: string, body?: unknown, session?: string],
    number,
    string,
  ][] = [
    ["a malformed e-mail", () => ["POST", "/v1/signup", { email: "not-an-address" }], 400, "INVALID_EMAIL"],
    [
      "an e-mail with a display name",
      () => ["POST", "/v1/signup", { email: "Alice <alice@example.com>" }],
      400,
      "INVALID_EMAIL",
    ],
    ["no e-mail at all", () => ["POST", "/v1/signup", {}], 400, "INVALID_EMAIL"],
    [
      "an unknown confirmation token",
      () => ["POST", "/v1/confirm", { token: "x".repeat(32) }],
      400,
      "TOKEN_INVALID",
    ],
    [
      "an expired confirmation token",
      () => ["POST", "/v1/confirm", { token: expiredToken }],
      400,
      "TOKEN_EXPIRED",
    ],
    [
      "a revoke of someone else's key",
      () => ["POST", `/v1/keys/${bobKeyId}/revoke`, undefined, alice],
      404,
      "KEY_NOT_FOUND",
    ],
    [
      "a rotate of someone else's key",
      () => ["POST", `/v1/keys/${bobKeyId}/rotate`, undefined, alice],
      404,
      "KEY_NOT_FOUND",
    ],
    ["a key list without a session", () => ["GET", "/v1/keys"], 401, "SESSION_REQUIRED"],
    ["a made-up session", () => ["GET", "/v1/keys", undefined, "y".repeat(32)], 401, "SESSION_REQUIRED"],
    [
      "a free test for an unknown network",
      () => ["POST", "/v1/free-tests", { network: "ethereum" }, alice],
      404,
      "NETWORK_NOT_FOUND",
    ],
    [
      "an order on an unknown plan",
      () => ["POST", "/v1/orders", { network: "eth", plan: "gold" }, alice],
      400,
      "INVALID_FIELD",
    ],
    ["a body that is not JSON", () => ["POST", "/v1/signup", "{email:"], 400, "PARSE_ERROR"],
    ["a JSON array", () => ["POST", "/v1/signup", ["a@example.com"]], 400, "INVALID_FIELD"],
    ["an unknown route", () => ["GET", "/v1/admin"], 404, "API_ROUTE_NOT_FOUND"],
    ["a wrong HTTP method", () => ["GET", "/v1/signup"], 405, "HTTP_METHOD_NOT_ALLOWED"],
  ];

  for (const [name, request, status, code] of rows) {
    it(`${name} → ${status} ${code}, store unchanged`, async () => {
      const before = await snapshot();
      const [method, path, body, session] = request();
      const answer = await fx.api(method, path, body, session);
      expect(answer.status).toBe(status);
      expect(answer.json.error).toMatchObject({ code, status });
      expect(answer.json.error.message.length).toBeGreaterThan(10);
      expect(await snapshot()).toBe(before);
    });
  }

  it("an earlier sign-up's confirmation token is refused once a later one confirmed the account", async () => {
    const email = "dave@example.com";
    const tokens: string[] = [];
    for (const _ of [1, 2]) {
      const mail = smtp.next(email);
      expect((await fx.api("POST", "/v1/signup", { email })).status).toBe(202);
      tokens.push(tokenIn(await mail));
    }
    const [earlier, later] = tokens;
    expect((await fx.api("POST", "/v1/confirm", { token: later })).status).toBe(200);
    const answer = await fx.api("POST", "/v1/confirm", { token: earlier });
    expect(answer.status).toBe(400);
    expect(answer.json.error.code).toBe("TOKEN_INVALID");
    expect(answer.json.session).toBeUndefined();
  });

  it("a sign-up answers the same whether or not the address has an account; the e-mail says which", async () => {
    const fresh = smtp.next("carol@example.com");
    const newcomer = await fx.api("POST", "/v1/signup", { email: "carol@example.com" });
    // the account is made, and its e-mail sent, after the answer (src/control/accounts/sessions.ts)
    expect(await fresh).toContain("Confirm your account");
    const before = await snapshot();
    for (const email of ["alice@example.com", "ALICE@example.com"]) {
      const mail = smtp.next("alice@example.com");
      const again = await fx.api("POST", "/v1/signup", { email });
      expect(again.status).toBe(newcomer.status);
      expect(Object.keys(again.json).sort()).toEqual(Object.keys(newcomer.json).sort());
      expect(again.json.next).toBe(newcomer.json.next);
      // an existing user is told to sign in, with a token that works
      const text = await mail;
      expect(text).toContain("Subject: You already have an account");
      const session = await fx.api("POST", "/v1/session", { token: tokenIn(text) });
      expect(session.status).toBe(200);
    }
    // no second account, and alice's is as it was (her sign-in tokens aside)
    const accounts = await fx.accounts.store.listAccounts();
    expect(accounts.filter((a) => a.email === "alice@example.com")).toHaveLength(1);
    expect(JSON.stringify(accounts)).toBe(JSON.stringify(JSON.parse(before)[1]));
  });

  it("sign-ups are rate limited per IP", async () => {
    const limited = await startAccounts(
      { signupRatePerIp: { perSecond: 0.001, burst: 2 } },
      undefined,
      store,
    );
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++)
        statuses.push((await limited.api("POST", "/v1/signup", { email: `u${i}@example.com` })).status);
      expect(statuses).toEqual([202, 202, 429]);
    } finally {
      await limited.close();
    }
  });
});
