import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { request } from "undici";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { nearPolicy } from "../../generated/policies.js";
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { type FaultyNode, startFaultyNode } from "../support/faulty-node.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, jsonRpcResponder, restResponder, type SeenRequest } from "../support/loopback-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A write is never sent to a node twice, counted at the nodes. Node a is the primary and b a fallback,
// so a write goes to a first; the probes run rarely, so they never move a node during a test, and each
// test gets a gateway of its own, with both nodes in rotation.

const RAW_TX = `0x${"f8".repeat(60)}`;
const TX_HASH = `0x${"ab".repeat(32)}`;
const isWrite = (r: SeenRequest) =>
  r.body.includes("eth_sendRawTransaction") || (r.method === "POST" && r.url.startsWith("/v2/transactions"));

describe("writes are never sent twice", () => {
  let a: FaultyNode;
  let b: FaultyNode;
  let gw: RunningGateway;
  const writes = (node: FaultyNode) => node.requests.filter(isWrite).length;
  const state = (label: string, name: string) =>
    gw.gateway.upstreams.group(label, "/")?.members.find((m) => m.name === name)?.health.state;

  // A node's own JSON-RPC error (here: for the transaction 0xdead) is an answer, not a failure.
  const nodeError: typeof jsonRpcResponder = () => (request) =>
    request.body.includes('"0xdead"')
      ? {
          body: `{"jsonrpc":"2.0","id":${/"id":(\d+)/.exec(request.body)?.[1]},"error":{"code":-32000,"message":"nonce too low"}}`,
        }
      : undefined;
  const respond = (height: number) =>
    firstOf(
      restResponder({
        "GET /v2/status": { "last-round": height, "time-since-last-round": 1 },
        "POST /v2/transactions": { txId: "TXID" },
      }),
      nodeError({}),
      jsonRpcResponder({ eth_blockNumber: `0x${height.toString(16)}`, eth_sendRawTransaction: TX_HASH }),
    );

  beforeAll(async () => {
    [a, b] = await Promise.all([startFaultyNode(respond), startFaultyNode(respond)]);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });
  beforeEach(async () => {
    a.fault = "none";
    await a.revive();
    a.requests.length = 0;
    b.requests.length = 0;
    const pair = [
      { url: a.url, name: "a" },
      { url: b.url, name: "b", tier: "fallback" as const },
    ];
    gw = await startGateway({
      upstreams: { eth: pair, algo: pair },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      limits: { upstream: { ...DEFAULT_LIMITS.upstream, deadlineMs: 800, hedgeMinMs: 50, hedgeMaxMs: 100 } },
    });
    // the first probes, sent at start, have put both in rotation on both labels
    await eventually(
      () =>
        ["eth", "algo"].every((label) => state(label, "a") === "healthy" && state(label, "b") === "healthy"),
      2000,
      "the first probes",
    );
  });
  afterEach(async () => {
    await gw?.close();
  });

  const sendRaw = (id: number, tx = RAW_TX) =>
    gw.call("eth", `/${KEYS.all}/`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method: "eth_sendRawTransaction", params: [tx] }),
    });

  it("a node that reads the write and resets the connection: it reached one node once, and the caller is told it is unconfirmed", async () => {
    a.fault = "reset";
    const r = await sendRaw(41);
    expect(r.status).toBe(502);
    expect(r.json).toMatchObject({
      jsonrpc: "2.0",
      id: 41,
      error: { code: -32022, data: { code: "WRITE_NOT_CONFIRMED" } },
    });
    expect([writes(a), writes(b)]).toEqual([1, 0]);
  });

  it("a node that reads the write and hangs: no hedge, no second node, unconfirmed at the deadline", async () => {
    a.fault = "hang";
    const started = performance.now();
    const r = await sendRaw(42);
    const took = performance.now() - started;
    expect(r.status).toBe(502);
    expect(r.json).toMatchObject({ id: 42, error: { data: { code: "WRITE_NOT_CONFIRMED" } } });
    // the deadline (800 ms) is the attempt's headers timeout, which undici keeps with its fast timers: a
    // tick of 499 ms, so it fires up to about half a second either side (undici lib/util/timers.js)
    expect(took).toBeGreaterThan(250);
    expect(took).toBeLessThan(3000);
    expect([writes(a), writes(b)]).toEqual([1, 0]);
  });

  it("a node that refuses the connection got nothing: the write goes to the next node, once", async () => {
    await a.kill();
    const r = await sendRaw(43);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ jsonrpc: "2.0", id: 43, result: TX_HASH });
    expect([writes(a), writes(b)]).toEqual([0, 1]);
  });

  it("a read on the same node is tried on the next one: only writes are held back", async () => {
    a.fault = "reset";
    const r = await gw.call("eth", `/${KEYS.all}/`, {
      body: '{"jsonrpc":"2.0","id":44,"method":"eth_blockNumber","params":[]}',
    });
    expect(r.status).toBe(200);
    expect(b.requests.some((req) => req.body.includes('"id":44'))).toBe(true);
  });

  it("a hedge's 503 does not win over the first node's answer still on its way", async () => {
    // a answers after the hedge went to b, which answers 503 at once: the caller gets a's answer
    a.delayMs = 300;
    b.fault = "error";
    try {
      const r = await gw.call("eth", `/${KEYS.all}/`, {
        body: '{"jsonrpc":"2.0","id":47,"method":"eth_blockNumber","params":[]}',
      });
      expect(r.status, r.text).toBe(200);
      expect(r.json).toMatchObject({ id: 47, result: expect.stringMatching(/^0x/) });
      expect(b.requests.some((req) => req.body.includes('"id":47'))).toBe(true);
    } finally {
      a.delayMs = 0;
      b.fault = "none";
    }
  });

  it("a batch with a write in it is a write", async () => {
    a.fault = "reset";
    const r = await gw.call("eth", `/${KEYS.all}/`, {
      body: `[{"jsonrpc":"2.0","id":45,"method":"eth_blockNumber","params":[]},{"jsonrpc":"2.0","id":46,"method":"eth_sendRawTransaction","params":["${RAW_TX}"]}]`,
    });
    expect(r.status).toBe(502);
    expect(JSON.stringify(r.json)).toContain("WRITE_NOT_CONFIRMED");
    expect([writes(a), writes(b)]).toEqual([1, 0]);
  });

  it("a REST write (POST /v2/transactions) follows the same rule", async () => {
    a.fault = "reset";
    const r = await gw.call("algo", `/${KEYS.all}/v2/transactions`, {
      method: "POST",
      body: "signed-transaction-bytes",
      headers: { "content-type": "application/x-binary" },
    });
    expect(r.status).toBe(502);
    expect(r.json).toMatchObject({ error: { code: "WRITE_NOT_CONFIRMED", status: 502 } });
    expect([writes(a), writes(b)]).toEqual([1, 0]);
  });

  it("a node's own JSON-RPC error passes through and does not count against the node", async () => {
    const before = gw.gateway.upstreams.group("eth", "/")?.members.find((m) => m.name === "a")
      ?.health.errorRate;
    for (let i = 0; i < 5; i++) {
      const r = await sendRaw(50 + i, "0xdead");
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ id: 50 + i, error: { code: -32000, message: "nonce too low" } });
    }
    expect(state("eth", "a")).toBe("healthy");
    expect(
      gw.gateway.upstreams.group("eth", "/")?.members.find((m) => m.name === "a")?.health.errorRate,
    ).toBe(before);
    await eventually(() => writes(a) === 5, 1000, "the five writes at a");
    expect(writes(b)).toBe(0);
  });
});

describe("a write that never got a connection to its node", () => {
  // One node at one address serves Tezos' RPC and nearcore's: their streams and long polls share that
  // address's pool for held calls (upstream/upstreams.ts), here of one connection. A caller's head
  // monitor holds it; a send_tx (a write, held by nearcore until its wait_until) waits behind it and
  // reaches no node before its deadline.
  let node: Server;
  let gw: RunningGateway;
  const registered = nearPolicy.longPolls;
  let sendTxSeen = 0;

  beforeAll(async () => {
    (nearPolicy as { longPolls?: unknown }).longPolls = { ...registered, heldMs: 300 };
    node = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => {
        body += chunk;
      });
      req.on("end", () => {
        const json = (value: unknown) =>
          res.writeHead(200, { "content-type": "application/json" }).end(`${JSON.stringify(value)}\n`);
        if (req.url === "/monitor/heads/main") {
          res.writeHead(200, { "content-type": "application/json" });
          res.flushHeaders();
          return;
        }
        if (req.url === "/chains/main/blocks/head/header")
          return json({ level: 5_000_000, chain_id: "NetXdQprcVkpaWU", hash: "BLx" });
        if (body.includes('"send_tx"')) sendTxSeen += 1;
        const id = /"id":\s*("[^"]*"|\d+)/.exec(body)?.[1] ?? "null";
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(
            `{"jsonrpc":"2.0","result":{"chain_id":"mainnet","sync_info":{"latest_block_height":120000000}},"id":${id}}`,
          );
      });
    });
    await new Promise<void>((resolve) => node.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(node.address() as AddressInfo).port}`;
    gw = await startGateway({
      upstreams: { xtz: [url], near: [url] },
      limits: { upstream: { ...DEFAULT_LIMITS.upstream, connections: 1, deadlineMs: 300, hedgeMaxMs: 100 } },
    });
    await eventually(
      () =>
        ["xtz", "near"].every((label) =>
          (gw.gateway.upstreams.group(label, "/")?.members ?? []).every((m) => m.health.inRotation),
        ),
      5_000,
      "both labels' node in rotation",
    );
  });
  afterAll(async () => {
    (nearPolicy as { longPolls?: unknown }).longPolls = registered;
    await gw?.close();
    node?.closeAllConnections();
    node?.close();
  });

  it("is not 'unconfirmed': it reached no node, and the caller may send it again", async () => {
    const monitor = await request(`${gw.origin}/${KEYS.all}/monitor/heads/main`, {
      headers: { host: "xtz.gw.test" },
    });
    expect(monitor.statusCode).toBe(200);
    const r = await gw.call("near", `/${KEYS.all}/`, {
      body: '{"jsonrpc":"2.0","id":"w","method":"send_tx","params":{"signed_tx_base64":"AAAA","wait_until":"FINAL"}}',
    });
    expect(r.json).toMatchObject({ id: "w", error: { data: { code: "UPSTREAM_TIMEOUT" } } });
    expect(sendTxSeen).toBe(0);
    monitor.body.destroy();
  });

  it("on a WebSocket bridged over HTTP, a write that never got a connection is not 'unconfirmed' either", async () => {
    const restore = resolveTestHosts();
    const monitor = await request(`${gw.origin}/${KEYS.all}/monitor/heads/main`, {
      headers: { host: "xtz.gw.test" },
    });
    const client = await Client.open(`ws://near.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      const before = sendTxSeen;
      client.send(
        '{"jsonrpc":"2.0","id":"ws","method":"send_tx","params":{"signed_tx_base64":"AAAA","wait_until":"FINAL"}}',
      );
      const answer = await client.answerTo('"ws"', 5_000);
      expect(answer.error?.data?.code, JSON.stringify(answer)).toBe("UPSTREAM_TIMEOUT");
      expect(sendTxSeen).toBe(before);
    } finally {
      client.close();
      monitor.body.destroy();
      restore();
    }
  });

  it("on a WebSocket bridged over HTTP too: a long poll that never got a connection ends at its deadline", async () => {
    const restore = resolveTestHosts();
    const monitor = await request(`${gw.origin}/${KEYS.all}/monitor/heads/main`, {
      headers: { host: "xtz.gw.test" },
    });
    const client = await Client.open(`ws://near.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      client.send(
        '{"jsonrpc":"2.0","id":"t","method":"tx","params":{"tx_hash":"7tkzFg8RHBmMw1ncRJZCCZAizgq4rwCftTKYLce8RU8t","sender_account_id":"alice.near","wait_until":"FINAL"}}',
      );
      const answer = await client.answerTo('"t"', 5_000);
      expect(answer.error?.data?.code).toBe("UPSTREAM_TIMEOUT");
    } finally {
      client.close();
      monitor.body.destroy();
      restore();
    }
  });
});
