import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlanSpec } from "../../src/config/types.js";
import { keyHash } from "../../src/keys/digest.js";
import { PostgresUsageSink } from "../../src/keys/postgres-grants.js";
import { SqliteUsageSink } from "../../src/keys/sqlite-grants.js";
import { UsageCounter } from "../../src/keys/usage.js";
import { type AccountsFixture, STORES, startAccounts } from "../accounts/helpers.js";
import { type RunningGateway, rpcBody, startGateway, TEST_PLANS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { quotedPrintable } from "../support/outbox.js";
import { keyIn, type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";

// A rotated key is the same key to its owner (docs/accounts.md): a new secret, with the locks its owner
// set and the quota it had spent. A rotation that dropped them would turn a leaked key's replacement into
// an unlocked one, and give a spent quota a fresh allowance as often as the owner rotates.
describe.each(STORES)("a rotated key (%s store)", (store) => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let node: LoopbackNode;
  let gw: RunningGateway;
  let usage: UsageCounter;
  let sink: PostgresUsageSink | SqliteUsageSink;
  let session = "";
  const email = "rotating@example.com";

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({ rotationGraceSeconds: 3600 }, smtp.port, store);
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a", eth_chainId: "0x1" }));
    // counted into the store as a proxy counts, flushed by the test
    sink = fx.database.startsWith("postgres")
      ? new PostgresUsageSink(fx.database)
      : new SqliteUsageSink(fx.database);
    usage = new UsageCounter(sink, 3_600_000);
    gw = await startGateway({
      upstreams: { eth: [node.url] },
      keyStore: fx.accounts.keys,
      usage,
      // eth_blockNumber costs 10 compute units: 3 calls a day
      plans: { ...TEST_PLANS, shared: { ...(TEST_PLANS.shared as PlanSpec), dailyQuota: 30 } },
    });
    const confirmation = smtp.next(email);
    await fx.api("POST", "/v1/signup", { email });
    session = (await fx.api("POST", "/v1/confirm", { token: tokenIn(await confirmation) })).json.session;
  });
  afterAll(async () => {
    await gw?.close();
    await usage?.close();
    await node?.close();
    await fx?.close();
    await smtp?.close();
  });

  const order = async () => {
    const delivery = smtp.next(email);
    const ordered = await fx.api("POST", "/v1/orders", { network: "eth" }, session);
    expect(ordered.status).toBe(201);
    return { id: ordered.json.key.id as number, key: keyIn(await delivery) };
  };
  const rotate = async (id: number) => {
    const delivery = smtp.next(email);
    const rotated = await fx.api("POST", `/v1/keys/${id}/rotate`, undefined, session);
    expect(rotated.status).toBe(201);
    const mail = await delivery;
    // the e-mail says which key this one replaces, and until when that one works
    expect(quotedPrintable(mail).replace(/\s+/g, " ")).toMatch(
      /It replaces the key FN[A-Za-z0-9]{8}\S*, which works until \d{4}-\d\d-\d\d \d\d:\d\d UTC/,
    );
    return { id: rotated.json.key.id as number, key: keyIn(mail), view: rotated.json.key };
  };
  const call = (key: string, headers: Record<string, string> = {}) =>
    gw.call("eth", `/${key}`, { body: rpcBody("eth_blockNumber"), headers });

  it("keeps the locks its owner set", async () => {
    const old = await order();
    const settings = { methods: ["eth_blockNumber"], origins: ["https://app.example.com"] };
    expect((await fx.api("PUT", `/v1/keys/${old.id}/settings`, settings, session)).status).toBe(200);
    const next = await rotate(old.id);
    expect(next.view.settings).toEqual(settings);
    await fx.accounts.keys.refresh();
    const refused = await call(next.key, { origin: "https://elsewhere.example" });
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.json)).toContain('"setting":"origins"');
    expect((await call(next.key, { origin: "https://app.example.com" })).status).toBe(200);
  });

  it("goes on spending the quota of the key it replaced, through every rotation", async () => {
    const first = await order();
    expect((await call(first.key)).status).toBe(200); // 10
    expect((await call(first.key)).status).toBe(200); // 20
    const second = await rotate(first.id);
    await fx.accounts.keys.refresh();
    expect((await call(second.key)).status).toBe(200); // 30: the day's quota is spent
    expect((await call(second.key)).status).toBe(402);
    // a key in its grace period has its successor: it is not rotated again
    const again = await fx.api("POST", `/v1/keys/${first.id}/rotate`, undefined, session);
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({ code: "KEY_ALREADY_ROTATED", replacedBy: second.id });
    const third = await rotate(second.id);
    await fx.accounts.keys.refresh();
    expect((await call(third.key)).status).toBe(402);
    // a successor revoked (leaked as it was sent) leaves its predecessor rotatable again, the same line
    const leaked = await rotate(third.id);
    expect((await fx.api("POST", `/v1/keys/${leaked.id}/revoke`, undefined, session)).status).toBe(200);
    const again3 = await rotate(third.id);
    await fx.accounts.keys.refresh();
    expect((await call(again3.key)).status).toBe(402);
    // the old keys, still in their grace period, spend the same quota
    expect((await call(first.key)).status).toBe(402);
    // another key of the account has its own
    const other = await order();
    await fx.accounts.keys.refresh();
    expect((await call(other.key)).status).toBe(200);
    // the overview's meter of the newest key reads what its line spent, as the quota counts it
    await usage.flush();
    const overview = await fx.api("GET", "/v1/overview", undefined, session);
    const byId = (id: number) =>
      (
        overview.json.keys as { id: number; today: { units: number }; quota: { used: { today: number } } }[]
      ).find((k) => k.id === id);
    expect(byId(third.id)?.today.units).toBe(0);
    expect(byId(third.id)?.quota.used.today).toBe(30);
    expect(byId(other.id)?.quota.used.today).toBe(10);
    // what a shared quota's counters start from when Redis lost them: the line's spend, by its first key
    const today = new Date().toISOString().slice(0, 10);
    const line = fx.accounts.keys.lookup(keyHash(third.key))?.quotaScope ?? "";
    expect(line).toBe(fx.accounts.keys.lookup(keyHash(first.key))?.keyId);
    expect(await sink.spent(line, today)).toEqual({ day: 30, month: 30 });
    const own = fx.accounts.keys.lookup(keyHash(other.key))?.quotaScope ?? "";
    expect(await sink.spent(own, today)).toEqual({ day: 10, month: 10 });
  });
});

// On a plan whose quota is the account's, every key of the account on it spends one quota: each key's
// meter reads what they spent together, not its own share (a key refused at the quota read 0 %).
describe("the overview of a quota per account", () => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let node: LoopbackNode;
  let gw: RunningGateway;
  let usage: UsageCounter;
  let sink: SqliteUsageSink;
  const email = "team@example.com";
  const plans = {
    ...TEST_PLANS,
    shared: { ...(TEST_PLANS.shared as PlanSpec), dailyQuota: 30, quotaPer: "account" as const },
  };

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({}, smtp.port, "sqlite", {
      domain: "localhost",
      listen: { host: "127.0.0.1", port: 0 },
      support: { email: "support@example.com", dedicatedNodeUrl: "https://example.com/dedicated" },
      plans,
    });
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a" }));
    sink = new SqliteUsageSink(fx.database);
    usage = new UsageCounter(sink, 3_600_000);
    gw = await startGateway({ upstreams: { eth: [node.url] }, keyStore: fx.accounts.keys, usage, plans });
  });
  afterAll(async () => {
    await gw?.close();
    await usage?.close();
    await node?.close();
    await fx?.close();
    await smtp?.close();
  });

  it("each key's meter reads what the account's keys on the plan spent together", async () => {
    const confirmation = smtp.next(email);
    await fx.api("POST", "/v1/signup", { email });
    const session = (await fx.api("POST", "/v1/confirm", { token: tokenIn(await confirmation) })).json
      .session;
    const order = async () => {
      const delivery = smtp.next(email);
      const ordered = await fx.api("POST", "/v1/orders", { network: "eth" }, session);
      expect(ordered.status).toBe(201);
      return { id: ordered.json.key.id as number, key: keyIn(await delivery) };
    };
    const [a, b] = [await order(), await order()];
    await fx.accounts.keys.refresh();
    for (let i = 0; i < 3; i++)
      expect((await gw.call("eth", `/${a.key}`, { body: rpcBody("eth_blockNumber") })).status).toBe(200);
    expect((await gw.call("eth", `/${b.key}`, { body: rpcBody("eth_blockNumber") })).status).toBe(402);
    await usage.flush();
    const overview = await fx.api("GET", "/v1/overview", undefined, session);
    const keys = overview.json.keys as { id: number; quota: { per: string; used: { today: number } } }[];
    expect(keys.find((k) => k.id === b.id)?.quota).toMatchObject({ per: "account", used: { today: 30 } });
    expect(keys.find((k) => k.id === a.id)?.quota.used.today).toBe(30);
    // what a shared quota's counters start from when Redis lost them: the account's keys on the plan
    const principal = fx.accounts.keys.lookup(keyHash(b.key));
    const today = new Date().toISOString().slice(0, 10);
    expect(await sink.spent(`${principal?.accountId}:shared`, today)).toEqual({ day: 30, month: 30 });
    expect(await sink.spent(`${principal?.accountId}:dedicated`, today)).toEqual({ day: 0, month: 0 });
  });
});
