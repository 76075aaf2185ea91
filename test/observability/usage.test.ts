import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { GatewayConfig } from "../../src/config/types.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { type AccountsFixture, fixtureAccounts, STORES, startAccounts } from "../accounts/helpers.js";
import { ROOT } from "../registry/helpers.js";
import { bundleOf } from "../support/bundles.js";
import { killChild, listeningPort } from "../support/child-process.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { keyIn, type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";

// Usage per key: the proxy counts a key's calls per network and day, errors apart, and adds them to the
// account store once per flush interval. Its owner reads them through the self-service API. A graceful
// restart loses nothing; a crash loses at most the calls of the last interval.

const FLUSH_MS = 300;

describe.each(STORES)("usage per key (%s store)", (store) => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let node: LoopbackNode;
  let session = "";
  let key = "";
  let keyId = 0;
  const children: ChildProcess[] = [];

  const config = (): GatewayConfig => ({
    ...DEFAULT_CONFIG,
    domain: DOMAIN,
    listen: { host: "127.0.0.1", port: 0 },
    operator: undefined,
    keys: [],
    upstreams: { eth: [node.url] },
    health: { ...DEFAULT_HEALTH, probeIntervalMs: 0 },
    limits: { ...DEFAULT_LIMITS, drainTimeoutMs: 0 },
    log: { level: "silent", access: false },
    accounts: fixtureAccounts(fx, FLUSH_MS),
  });
  const call = async (port: number, body: string) => {
    const r = await request(`http://127.0.0.1:${port}/${key}/`, {
      method: "POST",
      headers: { host: `eth.${DOMAIN}`, "content-type": "application/json" },
      body,
    });
    await r.body.text();
    return r.statusCode;
  };
  const rpc = (method: string) => `{"jsonrpc":"2.0","id":1,"method":"${method}","params":[]}`;
  const usage = async (query = "") => fx.api("GET", `/v1/keys/${keyId}/usage${query}`, undefined, session);
  const totalNow = async () => (await usage()).json.total as { calls: number; errors: number; units: number };

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({}, smtp.port, store);
    node = await startLoopbackNode(
      jsonRpcResponder({ eth_blockNumber: "0x1", eth_chainId: "0x1", eth_gasPrice: "0x3b9aca00" }),
    );
    const email = "usage@example.com";
    const confirmation = smtp.next(email);
    await fx.api("POST", "/v1/signup", { email });
    session = (await fx.api("POST", "/v1/confirm", { token: tokenIn(await confirmation) })).json.session;
    const keyMail = smtp.next(email);
    const issued = await fx.api("POST", "/v1/free-tests", { network: "eth" }, session);
    expect(issued.status).toBe(201);
    keyId = issued.json.key.id;
    key = keyIn(await keyMail);
  });
  afterAll(async () => {
    await Promise.all(children.map((child) => killChild(child)));
    await node?.close();
    await fx?.close();
    await smtp?.close();
  });

  it("counts calls per network and day, errors apart, and a graceful restart keeps every one", async () => {
    let proxy: RunningProxy = await runProxy(config(), createLogger("silent"));
    for (let i = 0; i < 3; i++) expect(await call(proxy.port, rpc("eth_blockNumber"))).toBe(200);
    expect(await call(proxy.port, rpc("admin_peers"))).toBe(403); // refused: a call, and an error
    expect(await call(proxy.port, `[${rpc("eth_blockNumber")},${rpc("eth_chainId")}]`)).toBe(200);
    await proxy.close(); // flushes what it counted, well inside the interval
    proxy = await runProxy(config(), createLogger("silent"));
    for (let i = 0; i < 2; i++) expect(await call(proxy.port, rpc("eth_blockNumber"))).toBe(200);
    await proxy.close();

    const today = new Date().toISOString().slice(0, 10);
    const answer = await usage();
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({
      key: { id: keyId },
      to: today,
      days: [{ day: today, label: "eth", calls: 8, errors: 1 }],
      total: { calls: 8, errors: 1 },
    });
    expect(JSON.stringify(answer.json)).not.toContain(key);
  });

  it("answers in the shape docs/operations.md shows a customer", async () => {
    // the answer as "Usage per key" prints it, read as a newcomer reads it (a newcomer audit): every
    // member the API answers is there, and its key's prefix is as long as the real one
    const doc = readFileSync(join(ROOT, "docs/operations.md"), "utf8");
    const shown = JSON.parse(
      doc.split("## Usage per key")[1]?.split("The answer:")[1]?.split("```json")[1]?.split("```")[0] ??
        "null",
    );
    const shape = (value: unknown): unknown =>
      Array.isArray(value)
        ? value.slice(0, 1).map(shape)
        : typeof value === "object" && value !== null
          ? Object.fromEntries(
              Object.entries(value)
                .sort(([a], [b]) => a.localeCompare(b))
                .map(([name, member]) => [name, shape(member)]),
            )
          : typeof value;
    const answer = (await usage()).json;
    expect(shape(shown)).toEqual(shape(answer));
    expect(shown.key.prefix.length).toBe(answer.key.prefix.length);
  });

  it("counts errors by code call by call, and a call to a network the key may not reach as the key's error", async () => {
    const byCode = async () => {
      const overview = await fx.api("GET", "/v1/overview", undefined, session);
      return new Map(
        (overview.json.errors as { code: string; count: number }[]).map((e) => [e.code, e.count] as const),
      );
    };
    const before = await byCode();
    const callOn = async (port: number, label: string, body: string) => {
      const r = await request(`http://127.0.0.1:${port}/${key}/`, {
        method: "POST",
        headers: { host: `${label}.${DOMAIN}`, "content-type": "application/json" },
        body,
      });
      await r.body.text();
      return r.statusCode;
    };
    const proxy = await runProxy(config(), createLogger("silent"));
    // two calls refused on their own inside a batch whose third is answered: two errors of their code
    expect(
      await call(proxy.port, `[${rpc("admin_peers")},${rpc("admin_peers")},${rpc("eth_blockNumber")}]`),
    ).toBe(200);
    // the free test is for eth alone
    expect(await callOn(proxy.port, "btc", rpc("getblockcount"))).toBe(403);
    await proxy.close();
    const after = await byCode();
    const added = (code: string) => (after.get(code) ?? 0) - (before.get(code) ?? 0);
    expect(added("METHOD_NOT_FOUND")).toBe(2);
    expect(added("NETWORK_FORBIDDEN")).toBe(1);
  });

  it("counts a batch's calls by their methods, its units shared by their costs, and its refused calls as errors, untimed", async () => {
    type MethodLine = { label: string; method: string; calls: number; units?: number; meanMs?: number };
    const lines = async () => {
      const overview = (await fx.api("GET", "/v1/overview", undefined, session)).json;
      return {
        dearest: overview.dearest as MethodLine[],
        slowest: overview.slowest as MethodLine[],
        errors: overview.errors as { code: string; count: number }[],
      };
    };
    const line = (all: MethodLine[], method: string) =>
      all.find((m) => m.label === "eth" && m.method === method) ?? { calls: 0, units: 0 };
    const before = await lines();
    const proxy = await runProxy(config(), createLogger("silent"));
    // eth_gasPrice costs the interface's default 20, eth_blockNumber 10 (docs/compute-units.md)
    const batch = `[${rpc("eth_gasPrice")},${rpc("eth_blockNumber")},${rpc("eth_gasPrice")},${rpc("admin_peers")}]`;
    expect(await call(proxy.port, batch)).toBe(200);
    await proxy.close();
    const after = await lines();
    for (const all of [after.dearest, after.slowest]) expect(all.map((m) => m.method)).not.toContain("batch");
    const gasPrice = line(after.dearest, "eth_gasPrice");
    expect(gasPrice.calls - line(before.dearest, "eth_gasPrice").calls).toBe(2);
    expect((gasPrice.units ?? 0) - (line(before.dearest, "eth_gasPrice").units ?? 0)).toBe(40);
    const blockNumber = line(after.dearest, "eth_blockNumber");
    expect((blockNumber.units ?? 0) - (line(before.dearest, "eth_blockNumber").units ?? 0)).toBe(10);
    // the call refused on its own is an error of its code, and took no node's time: counted, not timed
    const refused = (all: { code: string; count: number }[]) =>
      all.find((e) => e.code === "METHOD_NOT_FOUND")?.count ?? 0;
    expect(refused(after.errors) - refused(before.errors)).toBe(1);
    expect(after.slowest.map((m) => m.method)).not.toContain("other");
  });

  it("loses no more than one flush interval's calls when the proxy is killed", async () => {
    const file = join(fx.dir, "deployment.yaml");
    writeFileSync(
      file,
      [
        `domain: ${DOMAIN}`,
        "listen: { host: 127.0.0.1, port: 0 }",
        "operator: null",
        `upstreams: { eth: ["${node.url}"] }`,
        "log: { level: info, access: false }",
        "accounts:",
        `  database: ${fx.database}`,
        "  listen: { host: 127.0.0.1, port: 0 }",
        `  mail: { from: "gw@example.com", outbox: ${join(fx.dir, "outbox")} }`,
        `  usageFlushIntervalMs: ${FLUSH_MS}`,
      ].join("\n"),
    );
    const entry = await bundleOf("src/proxy/main.ts");
    const start = () => {
      const child = spawn(process.execPath, [entry], {
        cwd: ROOT,
        env: { ...process.env, GATEWAY_CONFIG: file },
        stdio: ["ignore", "ignore", "pipe"],
      });
      children.push(child);
      return child;
    };
    const before = await totalNow();
    const proxy = start();
    const port = await listeningPort(proxy, "gateway listening");
    for (let i = 0; i < 5; i++) expect(await call(port, rpc("eth_blockNumber"))).toBe(200);
    // a flush while it runs, not only at a graceful stop: the five reach the store, then it is killed
    const total = async () => JSON.stringify(await totalNow());
    // eth_blockNumber costs 10 compute units (docs/compute-units.md)
    const flushed = JSON.stringify({
      calls: before.calls + 5,
      errors: before.errors,
      units: before.units + 50,
    });
    await eventually(async () => (await total()) === flushed, 10 * FLUSH_MS, "the five calls flushed");
    const killed = new Promise((resolve) => proxy.once("exit", resolve));
    proxy.kill("SIGKILL");
    await killed;
    expect(await totalNow()).toEqual({
      calls: before.calls + 5,
      errors: before.errors,
      units: before.units + 50,
    });

    // and the proxy that takes over adds to what is there
    const next = start();
    const nextPort = await listeningPort(next, "gateway listening");
    expect(await call(nextPort, rpc("eth_blockNumber"))).toBe(200);
    const exited = new Promise((resolve) => next.once("exit", resolve));
    next.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(await totalNow()).toEqual({
      calls: before.calls + 6,
      errors: before.errors,
      units: before.units + 60,
    });
  });

  it("shows a key's usage to its owner only, over a range of days they choose", async () => {
    const ranged = await usage("?from=2026-01-01&to=2026-01-31");
    expect(ranged.status).toBe(200);
    expect(ranged.json).toMatchObject({
      from: "2026-01-01",
      to: "2026-01-31",
      days: [],
      total: { calls: 0 },
    });
    expect((await usage("?from=yesterday")).json.error).toMatchObject({ code: "INVALID_FIELD" });
    expect((await usage("?from=2026-02-01&to=2026-01-01")).status).toBe(400);
    expect((await fx.api("GET", `/v1/keys/${keyId}/usage`)).status).toBe(401);

    const stranger = "stranger@example.com";
    const mail = smtp.next(stranger);
    await fx.api("POST", "/v1/signup", { email: stranger });
    const theirs = (await fx.api("POST", "/v1/confirm", { token: tokenIn(await mail) })).json.session;
    expect((await fx.api("GET", `/v1/keys/${keyId}/usage`, undefined, theirs)).status).toBe(404);
    // the account-wide view names each key by its prefix
    const all = await fx.api("GET", "/v1/usage", undefined, session);
    expect(all.json.days.every((row: { key: string }) => key.startsWith(row.key))).toBe(true);
  });
});
