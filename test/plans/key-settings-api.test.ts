import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AccountsFixture, STORES, startAccounts } from "../accounts/helpers.js";
import { type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { keyIn, type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";

// A key's owner restricts it through the self-service API (PUT /v1/keys/{id}/settings, docs/accounts.md), and
// the proxy applies the settings from its next call; a wrong entry is named, and nothing is changed.
describe.each(STORES)("key settings through the self-service API (%s store)", (store) => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let node: LoopbackNode;
  let gw: RunningGateway;
  let session = "";
  let key = "";
  let keyId = 0;
  const email = "settings@example.com";

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({}, smtp.port, store);
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a", eth_chainId: "0x1" }));
    gw = await startGateway({ upstreams: { eth: [node.url] }, keyStore: fx.accounts.keys });
    const confirmation = smtp.next(email);
    await fx.api("POST", "/v1/signup", { email });
    session = (await fx.api("POST", "/v1/confirm", { token: tokenIn(await confirmation) })).json.session;
    const delivery = smtp.next(email);
    const ordered = await fx.api("POST", "/v1/orders", { network: "eth" }, session);
    expect(ordered.status).toBe(201);
    keyId = ordered.json.key.id;
    key = keyIn(await delivery);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    await fx?.close();
    await smtp?.close();
  });

  const call = (method: string, headers: Record<string, string> = {}) =>
    gw.call("eth", `/${key}`, { body: rpcBody(method), headers });

  it("applies new settings from the next call, and clears them with empty lists", async () => {
    expect((await call("eth_chainId")).status).toBe(200);
    const set = await fx.api(
      "PUT",
      `/v1/keys/${keyId}/settings`,
      { methods: ["eth_blockNumber"], origins: ["https://app.example.com"] },
      session,
    );
    expect(set.status).toBe(200);
    expect(set.json.key.settings).toEqual({
      methods: ["eth_blockNumber"],
      origins: ["https://app.example.com"],
    });
    const origin = { origin: "https://app.example.com" };
    expect((await call("eth_blockNumber", origin)).status).toBe(200);
    const refused = await call("eth_chainId", origin);
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.json)).toContain('"setting":"methods"');
    expect(refused.text).not.toContain(key);
    const elsewhere = await call("eth_blockNumber");
    expect(JSON.stringify(elsewhere.json)).toContain('"setting":"origins"');
    // refused before its body was read, it still answers with the call's own id
    expect((elsewhere.json as { id: unknown }).id).toBe(1);
    // the listing shows them
    const listed = await fx.api("GET", "/v1/keys", undefined, session);
    expect(listed.json.keys[0].settings.methods).toEqual(["eth_blockNumber"]);
    // cleared
    expect(
      (await fx.api("PUT", `/v1/keys/${keyId}/settings`, { methods: [], origins: [] }, session)).status,
    ).toBe(200);
    expect((await call("eth_chainId")).status).toBe(200);
  });

  it("names a wrong entry and changes nothing; another account's key is not found", async () => {
    const wrong = await fx.api(
      "PUT",
      `/v1/keys/${keyId}/settings`,
      { ips: ["10.0.0.0/8", "nowhere"] },
      session,
    );
    expect(wrong.status).toBe(400);
    expect(wrong.json.error.code).toBe("INVALID_FIELD");
    expect(wrong.json.error.data?.field ?? wrong.json.error.field).toBe("ips[1]");
    expect((await call("eth_chainId")).status).toBe(200);
    // a method or a route no network serves is a typo, named; patterns are taken as written
    const typo = await fx.api(
      "PUT",
      `/v1/keys/${keyId}/settings`,
      { methods: ["eth_call", "eth_foo", "debug_*", "GET /chains/{}/blocks/{}"] },
      session,
    );
    expect(typo.status).toBe(400);
    expect(typo.json.error).toMatchObject({ field: "methods[1]" });
    // its examples are methods this deployment serves: saved, they are taken
    const [, examples = ""] =
      /^a method one of the networks serves \((.*), …\)$/.exec(typo.json.error.reason) ?? [];
    expect(examples.split(", ")).toHaveLength(2);
    const taken = await fx.api(
      "PUT",
      `/v1/keys/${keyId}/settings`,
      { methods: examples.split(", ") },
      session,
    );
    expect(taken.status, examples).toBe(200);
    await fx.api("PUT", `/v1/keys/${keyId}/settings`, { methods: [] }, session);
    expect((await call("eth_chainId")).status).toBe(200);
    // a route as the gateway names it: the HTTP method in capitals, a shape a network serves, no trailing slash
    for (const [entry, reason] of [
      ["POST /wallet/nonexistent", "a route one of the networks serves"],
      ["post /wallet/getnowblock", "in capitals"],
      ["POST /wallet/getblockbynum/", "without a trailing slash"],
    ]) {
      const route = await fx.api("PUT", `/v1/keys/${keyId}/settings`, { methods: [entry] }, session);
      expect(route.status, entry).toBe(400);
      expect(route.json.error.reason, entry).toContain(reason);
    }
    // another network's route, well spelled, on this eth key: it would allow the key nothing
    const elsewhere = await fx.api(
      "PUT",
      `/v1/keys/${keyId}/settings`,
      { methods: ["GET /chains/{}/blocks/{}", "POST /wallet/getnowblock"] },
      session,
    );
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.json.error.reason).toContain("a route one of the networks serves");
    const patterns = await fx.api(
      "PUT",
      `/v1/keys/${keyId}/settings`,
      { methods: ["GET /wallet/*", "eth_*"] },
      session,
    );
    expect(patterns.status).toBe(200);
    expect((await fx.api("PUT", "/v1/keys/999999/settings", { ips: ["10.0.0.0/8"] }, session)).status).toBe(
      404,
    );
    // without any session there is nothing to forge: the caller is told to sign in, not to reload a page
    const anonymous = await fx.api("PUT", `/v1/keys/${keyId}/settings`, { ips: ["10.0.0.0/8"] });
    expect(anonymous.status).toBe(401);
    expect(anonymous.json.error.code).toBe("SESSION_REQUIRED");
  });
});
