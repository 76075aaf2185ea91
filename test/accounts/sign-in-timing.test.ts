import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";
import { type AccountsFixture, startAccounts } from "./helpers.js";

// Sign-up and sign-in answer the same whether or not the address has an account (docs/accounts.md): by
// their body, and by their time. The e-mail for an address with an account (a token written, a message
// handed to an SMTP server) goes after the answer; before, a sign-in for such an address took the mail
// server's time (112 ms against 3 ms over a loopback SMTP server), which told who has an account.

/** A mail server that takes this long to accept a message: far more than an answer takes without it. */
const ACCEPT_MS = 600;

describe("sign-up and sign-in take the same time whether or not the address has an account", () => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  const timed = async (path: string, email: string) => {
    const started = performance.now();
    const answer = await fx.api("POST", path, { email });
    return { status: answer.status, body: answer.json, ms: performance.now() - started };
  };

  beforeAll(async () => {
    smtp = await startSmtp({ acceptDelayMs: ACCEPT_MS });
    fx = await startAccounts({}, smtp.port);
    const confirmation = smtp.next("has@example.com");
    await fx.api("POST", "/v1/signup", { email: "has@example.com" });
    expect((await fx.api("POST", "/v1/confirm", { token: tokenIn(await confirmation) })).status).toBe(200);
  });
  afterAll(async () => {
    await fx?.close();
    await smtp?.close();
  });

  it("answers a sign-in before its e-mail is sent, and the same for an unknown address", async () => {
    const mail = smtp.next("has@example.com");
    const known = await timed("/v1/login", "has@example.com");
    const unknown = await timed("/v1/login", "nobody@example.com");
    expect(known.ms, "the known address's answer waited for the mail server").toBeLessThan(ACCEPT_MS / 2);
    expect({ status: known.status, body: known.body }).toEqual({
      status: unknown.status,
      body: unknown.body,
    });
    // and the e-mail still goes, with a token that signs in
    const session = await fx.api("POST", "/v1/session", { token: tokenIn(await mail) });
    expect(session.status).toBe(200);
  });

  it("answers a sign-up for an address with an account before its e-mail is sent", async () => {
    const mail = smtp.next("has@example.com");
    const known = await timed("/v1/signup", "has@example.com");
    expect(known.ms).toBeLessThan(ACCEPT_MS / 2);
    expect(await mail).toMatch(/sign in/i);
  });

  it("sends a sign-in for an address never confirmed its confirmation again, whose link confirms it", async () => {
    const first = smtp.next("pending@example.com");
    await fx.api("POST", "/v1/signup", { email: "pending@example.com" });
    await first;
    const again = smtp.next("pending@example.com");
    const asked = await timed("/v1/login", "pending@example.com");
    expect(asked.status).toBe(202);
    const confirmed = await fx.api("POST", "/v1/confirm", { token: tokenIn(await again) });
    expect(confirmed.status).toBe(200);
  });
});
