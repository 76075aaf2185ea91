import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";
import { type AccountsFixture, startAccounts } from "./helpers.js";

// docs/accounts.md: calls marked session take `Authorization: Bearer <session>`. RFC 9110 §11.1 and §11.4:
// the scheme is a case-insensitive token, parted from the credentials by one or more spaces; clients that
// write `bearer` (hand-written and generated ones alike) must not be told to sign in.
describe("the session's Authorization scheme", () => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let session = "";
  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({}, smtp.port);
    const email = "scheme@example.com";
    const mail = smtp.next(email);
    await fx.api("POST", "/v1/signup", { email });
    session = (await fx.api("POST", "/v1/confirm", { token: tokenIn(await mail) })).json.session;
  });
  afterAll(async () => {
    await fx?.close();
    await smtp?.close();
  });

  async function accountStatus(authorization: string): Promise<number> {
    const answer = await request(`${fx.origin}/v1/account`, { headers: { authorization } });
    await answer.body.dump();
    return answer.statusCode;
  }

  it("is matched whatever its case, with one or more spaces before the session", async () => {
    for (const scheme of ["Bearer ", "bearer ", "BEARER ", "bEaReR ", "Bearer   "])
      expect(await accountStatus(`${scheme}${session}`), JSON.stringify(scheme)).toBe(200);
  });

  it("is still only Bearer, and the session still one token", async () => {
    for (const authorization of [
      `Basic ${session}`,
      `Bearer${session}`,
      `Bearer ${session} extra`,
      "Bearer ",
    ])
      expect(await accountStatus(authorization), authorization).toBe(401);
  });
});
