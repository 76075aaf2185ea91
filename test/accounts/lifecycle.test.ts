import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { keyIn, type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";
import { type AccountsFixture, type ApiAnswer, STORES, startAccounts } from "./helpers.js";

const DAY = 86_400_000;

describe.each(STORES)("key lifecycle (%s store)", (store) => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let node: LoopbackNode;
  let gw: RunningGateway;
  const issued: string[] = [];

  async function signIn(email: string): Promise<string> {
    const mail = smtp.next(email);
    expect((await fx.api("POST", "/v1/signup", { email })).status).toBe(202);
    const confirmed = await fx.api("POST", "/v1/confirm", { token: tokenIn(await mail) });
    return confirmed.json.session as string;
  }

  async function keyFrom(
    email: string,
    call: () => Promise<ApiAnswer>,
  ): Promise<{ key: string; id: number }> {
    const mail = smtp.next(email);
    const answer = await call();
    expect(answer.status).toBe(201);
    const key = keyIn(await mail);
    issued.push(key);
    return { key, id: answer.json.key.id };
  }

  const eth = (key: string, method = "eth_blockNumber") =>
    gw.call("eth", `/${key}/`, { body: rpcBody(method, []) });

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({ rotationGraceSeconds: 3600 }, smtp.port, store);
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x1", debug_traceTransaction: {} }));
    gw = await startGateway({ upstreams: { eth: [node.url] }, keyStore: fx.accounts.keys });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    await fx?.close();
    await smtp?.close();
  });

  it("a free test ends on its end date", async () => {
    const session = await signIn("free@example.com");
    const { key } = await keyFrom("free@example.com", () =>
      fx.api("POST", "/v1/free-tests", { network: "eth" }, session),
    );
    expect((await eth(key)).status).toBe(200);
    fx.advance(7 * DAY + 1000);
    expect((await eth(key)).status).toBe(401);
    // the week-old session has ended too; the owner's listing shows the key as expired
    expect((await fx.api("GET", "/v1/keys", undefined, session)).status).toBe(401);
    const account = await fx.accounts.store.accountByEmail("free@example.com");
    if (account === undefined) throw new Error("no account");
    expect((await fx.accounts.service.keys.list(account))[0]?.status).toBe("expired");
  });

  it("a free test is one per network and a few per e-mail", async () => {
    const email = "many@example.com";
    const session = await signIn(email);
    await keyFrom(email, () => fx.api("POST", "/v1/free-tests", { network: "eth" }, session));
    const again = await fx.api("POST", "/v1/free-tests", { network: "eth" }, session);
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({
      code: "FREE_TEST_LIMIT",
      reason: "an account has one free test per network, and this one has had eth's",
    });
    await keyFrom(email, () => fx.api("POST", "/v1/free-tests", { network: "dot" }, session));
    await keyFrom(email, () => fx.api("POST", "/v1/free-tests", { network: "near" }, session));
    const fourth = await fx.api("POST", "/v1/free-tests", { network: "ton" }, session);
    expect(fourth.json.error).toMatchObject({
      code: "FREE_TEST_LIMIT",
      reason: "an account has 3 free tests, one per network, and this one has had them all",
    });
  });

  it("rotation issues a new key and keeps the old one for the grace period", async () => {
    const email = "rotate@example.com";
    const session = await signIn(email);
    const old = await keyFrom(email, () => fx.api("POST", "/v1/orders", { network: "eth" }, session));
    const next = await keyFrom(email, () => fx.api("POST", `/v1/keys/${old.id}/rotate`, undefined, session));
    expect(next.key).not.toBe(old.key);
    expect((await eth(old.key)).status).toBe(200);
    expect((await eth(next.key)).status).toBe(200);
    fx.advance(3600 * 1000 + 1000);
    expect((await eth(old.key)).status).toBe(401);
    expect((await eth(next.key)).status).toBe(200);
    const list = await fx.api("GET", "/v1/keys", undefined, session);
    expect(list.json.keys.find((k: { id: number }) => k.id === old.id)).toMatchObject({
      status: "expired",
      replacedBy: next.id,
    });
  });

  it("a dedicated-plan key can call a method that a shared-plan key cannot", async () => {
    const email = "plans@example.com";
    const session = await signIn(email);
    const shared = await keyFrom(email, () =>
      fx.api("POST", "/v1/orders", { network: "eth", plan: "shared" }, session),
    );
    const dedicated = await keyFrom(email, () =>
      fx.api("POST", "/v1/orders", { network: "eth", plan: "dedicated" }, session),
    );
    const refused = await eth(shared.key, "debug_traceTransaction");
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({
      error: { code: -32042, data: { code: "METHOD_NOT_ON_PLAN", support: "support@example.com" } },
    });
    const allowed = await eth(dedicated.key, "debug_traceTransaction");
    expect(allowed.status).toBe(200);
    expect(allowed.json).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
  });

  it("a suspended account's keys stop working within a second", async () => {
    const email = "suspend@example.com";
    const session = await signIn(email);
    const { key } = await keyFrom(email, () => fx.api("POST", "/v1/orders", { network: "eth" }, session));
    expect((await eth(key)).status).toBe(200);
    const account = await fx.accounts.store.accountByEmail(email);
    await fx.accounts.service.admin.setStatus(account?.id ?? 0, "suspended");
    expect((await eth(key)).status).toBe(401);
    const refused = await fx.api("GET", "/v1/keys", undefined, session);
    expect(refused.status).toBe(403);
    // the body's status is the HTTP status, as every error body's (docs/errors.md); the account's is its own member
    expect(refused.json).toMatchObject({
      error: { code: "ACCOUNT_NOT_ACTIVE", status: 403, accountStatus: "suspended" },
    });
  });

  it("the database never holds a key in clear", async () => {
    expect(issued.length).toBeGreaterThan(5);
    const bytes = await fx.dump();
    for (const key of issued) {
      expect(bytes).not.toContain(key);
      expect(bytes).toContain(key.slice(0, 10));
    }
  });

  it("no key appears in a log line", () => {
    const log = [...gw.logs, ...fx.logs].join("");
    expect(gw.logs.length).toBeGreaterThan(5);
    for (const key of issued) expect(log).not.toContain(key);
  });
});
