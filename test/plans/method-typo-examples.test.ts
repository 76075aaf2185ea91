import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { type AccountsFixture, startAccounts } from "../accounts/helpers.js";
import { keyIn, type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";

// A method list's entry that no network serves is refused as a typo, and the reason gives two methods as
// examples (docs/plans.md, key settings). For a key that reaches one network, the examples are that
// network's: another network's method, taken as the example says, would save a list that allows this key
// nothing, and its every call would be refused.
describe("the examples of a refused method-list entry", () => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let session = "";
  let keyId = 0;
  const email = "typo-examples@example.com";

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({}, smtp.port);
    const confirmation = smtp.next(email);
    await fx.api("POST", "/v1/signup", { email });
    session = (await fx.api("POST", "/v1/confirm", { token: tokenIn(await confirmation) })).json.session;
    const delivery = smtp.next(email);
    const ordered = await fx.api("POST", "/v1/orders", { network: "eth" }, session);
    expect(ordered.status).toBe(201);
    keyId = ordered.json.key.id;
    keyIn(await delivery);
  });
  afterAll(async () => {
    await fx?.close();
    await smtp?.close();
  });

  /** Every JSON-RPC method the network's endpoints serve. */
  function servedBy(network: string): Set<string> {
    const served = new Set<string>();
    for (const endpoint of endpointsByLabel.values())
      if (endpoint.code === network)
        for (const mount of endpoint.mounts)
          for (const method of mount.policy.jsonrpc?.methods.keys() ?? []) served.add(method);
    return served;
  }

  it("are methods of the key's own networks", async () => {
    const typo = await fx.api("PUT", `/v1/keys/${keyId}/settings`, { methods: ["eth_getBalanc"] }, session);
    expect(typo.status).toBe(400);
    expect(typo.json.error).toMatchObject({ field: "methods[0]" });
    const [, examples = ""] =
      /^a method one of the networks serves \((.*), …\)$/.exec(typo.json.error.reason) ?? [];
    const eth = servedBy("eth");
    expect(eth.size).toBeGreaterThan(0);
    for (const example of examples.split(", ")) expect(eth, typo.json.error.reason).toContain(example);
  });

  // a list of another network's methods only (Bitcoin's, on an eth key) was saved, and refused its every call
  it("a method none of the key's networks serves is refused too, as the typo it is on this key", async () => {
    const other = await fx.api("PUT", `/v1/keys/${keyId}/settings`, { methods: ["getblockcount"] }, session);
    expect(other.status).toBe(400);
    expect(other.json.error).toMatchObject({ field: "methods[0]" });
    // the key's own method still saves, and a pattern matches what it may
    const own = await fx.api(
      "PUT",
      `/v1/keys/${keyId}/settings`,
      { methods: ["eth_call", "debug_*"] },
      session,
    );
    expect(own.status).toBe(200);
  });
});
