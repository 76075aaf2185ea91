import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PLANS } from "../../src/config/defaults.js";
import type { PlanSpec } from "../../src/config/types.js";
import { type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";
import { type AccountsFixture, startAccounts } from "./helpers.js";

// A plan says how many keys an account may hold on it (`maxKeys`, docs/plans.md: the free test's 3). The
// free test's was never read: an operator who set `plans.free-test.maxKeys: 1` still saw each account hold
// a free test on each of three networks at once. A free test past it is 409 KEY_LIMIT, as an order is;
// one that ended makes room.
describe("the free-test plan's maxKeys", () => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let session = "";
  const email = "free-max@example.com";

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({}, smtp.port, "sqlite", {
      domain: "localhost",
      listen: { host: "127.0.0.1", port: 0 },
      support: { email: "support@example.com", dedicatedNodeUrl: "https://example.com/dedicated" },
      plans: { ...DEFAULT_PLANS, "free-test": { ...(DEFAULT_PLANS["free-test"] as PlanSpec), maxKeys: 1 } },
    });
    const confirmation = smtp.next(email);
    await fx.api("POST", "/v1/signup", { email });
    session = (await fx.api("POST", "/v1/confirm", { token: tokenIn(await confirmation) })).json.session;
  });
  afterAll(async () => {
    await fx?.close();
    await smtp?.close();
  });

  it("holds: one active free test, then KEY_LIMIT; its end makes room for the next network's", async () => {
    const first = await fx.api("POST", "/v1/free-tests", { network: "eth" }, session);
    expect(first.status).toBe(201);
    const refused = await fx.api("POST", "/v1/free-tests", { network: "dot" }, session);
    expect(refused.status).toBe(409);
    expect(refused.json.error).toMatchObject({ code: "KEY_LIMIT", plan: "free-test", maxKeys: 1 });
    // the first one revoked, another network's may be had
    expect((await fx.api("POST", `/v1/keys/${first.json.key.id}/revoke`, undefined, session)).status).toBe(
      200,
    );
    expect((await fx.api("POST", "/v1/free-tests", { network: "dot" }, session)).status).toBe(201);
  });
});
