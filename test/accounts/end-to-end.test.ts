import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { keyIn, type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";
import { type AccountsFixture, STORES, startAccounts } from "./helpers.js";

// The path of docs/accounts.md, with a real SMTP server: sign up, confirm, free test for eth, read the key from the
// e-mail, use it, see it refused on dot, revoke it and see it refused within a second.
describe.each(STORES)("accounts end to end (%s store)", (store) => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let node: LoopbackNode;
  let gw: RunningGateway;
  const email = "alice@example.com";

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({}, smtp.port, store);
    node = await startLoopbackNode(
      jsonRpcResponder({ eth_blockNumber: "0x2a", chain_getHeader: { number: "0x1" } }),
    );
    gw = await startGateway({ upstreams: { eth: [node.url], dot: [node.url] }, keyStore: fx.accounts.keys });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    await fx?.close();
    await smtp?.close();
  });

  let session = "";
  let key = "";
  let keyId = 0;

  it("1. signs up and confirms the e-mail address", async () => {
    const confirmation = smtp.next(email);
    const signup = await fx.api("POST", "/v1/signup", { email });
    expect(signup.status).toBe(202);
    expect(signup.json.email).toBe(email);
    const token = tokenIn(await confirmation);
    const confirmed = await fx.api("POST", "/v1/confirm", { token });
    expect(confirmed.status).toBe(200);
    expect(confirmed.json.account.status).toBe("active");
    session = confirmed.json.session;
  });

  it("2-3. requests a free test for eth; the key arrives by e-mail only", async () => {
    const delivery = smtp.next(email);
    const test = await fx.api("POST", "/v1/free-tests", { network: "eth" }, session);
    expect(test.status).toBe(201);
    expect(test.json.key).toMatchObject({ plan: "free-test", networks: ["eth"], status: "active" });
    expect(JSON.stringify(test.json)).not.toMatch(/FN[A-Za-z0-9]{32}/);
    key = keyIn(await delivery);
    keyId = test.json.key.id;
    expect(key.startsWith(test.json.key.prefix)).toBe(true);
  });

  it("4. calls eth through the gateway with it", async () => {
    const r = await gw.call("eth", `/${key}/`, { body: rpcBody("eth_blockNumber") });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ jsonrpc: "2.0", id: 1, result: "0x2a" });
  });

  it("5. calls dot with it and gets 403", async () => {
    const r = await gw.call("dot", `/${key}/`, { body: rpcBody("chain_getHeader") });
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({ error: { code: -32041, data: { code: "NETWORK_FORBIDDEN" } } });
  });

  it("6. revokes it and sees it refused within a second", async () => {
    const revoked = await fx.api("POST", `/v1/keys/${keyId}/revoke`, undefined, session);
    expect(revoked.status).toBe(200);
    expect(revoked.json.key.status).toBe("revoked");
    const started = Date.now();
    let status = 0;
    while (Date.now() - started < 1000) {
      status = (await gw.call("eth", `/${key}/`, { body: rpcBody("eth_blockNumber") })).status;
      if (status === 401) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(status).toBe(401);
  });

  it("lists keys by prefix only", async () => {
    const list = await fx.api("GET", "/v1/keys", undefined, session);
    expect(list.status).toBe(200);
    expect(list.json.keys).toEqual([
      expect.objectContaining({ id: keyId, status: "revoked", prefix: key.slice(0, 10) }),
    ]);
    expect(JSON.stringify(list.json)).not.toContain(key);
  });
});
