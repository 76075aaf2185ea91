import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientNet } from "../../src/http/client-net.js";
import { type AccountsFixture, startAccounts } from "./helpers.js";

// docs/accounts.md: sign-up and sign-in are limited per client IP and per e-mail address (3, then one every
// ten minutes), which keeps a stranger from filling someone's inbox. A flood of sign-in requests, each for an
// address without an account (nothing is written or sent), must not reset those limits: neither from the
// addresses of one IPv6 /64 nor from more IPv4 addresses than the limits' table holds (50,000 buckets).
/**
 * Lets the event loop turn every thousand sign-ins, as a flood arriving over sockets would. The store answers
 * at once (SQLite), so without it the loop runs only microtasks for the whole flood: seconds on a loaded host,
 * after which the server's keep-alive timer and the next API call's reuse of that socket come due together,
 * and the call can be reset (ECONNRESET in clean-clone CI runs).
 */
async function letTheLoopTurn(i: number): Promise<void> {
  if (i % 1_000 === 0) await new Promise((resolve) => setImmediate(resolve));
}

describe("the sign-up limits through a flood of sign-ins", () => {
  let fx: AccountsFixture;
  beforeAll(async () => {
    fx = await startAccounts({
      signupRatePerIp: { perSecond: 1 / 60, burst: 10 },
      signupRatePerEmail: { perSecond: 1 / 600, burst: 3 },
    });
  });
  afterAll(async () => {
    await fx?.close();
  });

  it("a fourth sign-up mail within ten minutes stays refused through a flood from one /64", async () => {
    const victim = "victim@example.com";
    for (let i = 0; i < 3; i++)
      expect((await fx.api("POST", "/v1/signup", { email: victim })).status).toBe(202);
    expect((await fx.api("POST", "/v1/signup", { email: victim })).status).toBe(429);

    const { sessions } = fx.accounts.service;
    const answers = { sent: 0, limited: 0 };
    for (let i = 0; i < 30_000; i++) {
      await letTheLoopTurn(i);
      try {
        await sessions.requestLogin(`nobody${i}@flood.example`, `2001:db8::${i.toString(16)}`);
        answers.sent += 1;
      } catch (error) {
        expect((error as { code?: string }).code).toBe("RATE_LIMITED");
        answers.limited += 1;
      }
    }
    // one /64 is one client: its burst of ten, then refused
    expect(answers.sent).toBe(10);
    expect((await fx.api("POST", "/v1/signup", { email: victim })).status).toBe(429);
  }, 120_000);

  it("a fourth sign-up mail within ten minutes stays refused through a flood from 30,000 IPv4 addresses", async () => {
    const victim = "other-victim@example.com";
    for (let i = 0; i < 3; i++)
      expect((await fx.api("POST", "/v1/signup", { email: victim })).status).toBe(202);
    expect((await fx.api("POST", "/v1/signup", { email: victim })).status).toBe(429);
    const { sessions } = fx.accounts.service;
    // each address's bucket and each e-mail's: 60,000 buckets, one token taken from each
    for (let i = 0; i < 30_000; i++) {
      await letTheLoopTurn(i);
      await sessions.requestLogin(`flood${i}@flood.example`, `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
    }
    expect((await fx.api("POST", "/v1/signup", { email: victim })).status).toBe(429);
  }, 120_000);

  it("counts an IPv6 client by its /64 and an IPv4 one by its address", () => {
    expect(clientNet("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(clientNet("2001:0db8:0000:0000:ffff:1:2:3")).toBe("2001:db8:0:0::/64");
    expect(clientNet("2001:db8:0:1::1")).toBe("2001:db8:0:1::/64");
    expect(clientNet("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(clientNet("::1")).toBe("0:0:0:0::/64");
    expect(clientNet("2001:db8:1:2:3::")).toBe("2001:db8:1:2::/64");
    expect(clientNet("64:ff9b::192.0.2.1")).toBe("64:ff9b:0:0::/64");
    expect(clientNet("::ffff:192.0.2.7")).toBe("192.0.2.7");
    expect(clientNet("192.0.2.7")).toBe("192.0.2.7");
  });
});
