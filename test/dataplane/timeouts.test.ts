import { createServer as createHttpServer, type Server } from "node:http";
import { type AddressInfo, createServer as createTcpServer, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { freePort } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { openRaw, type RawConnection, rawRequest } from "../support/raw-http.js";

// Slow clients and bad upstreams (docs/configuration.md's limits, docs/errors.md). Timing is asserted only
// as outcomes and generous upper bounds: the machine may be slow, the limits are what matter.

const K = KEYS.all;
const BLOCK_NUMBER = rpcBody("eth_blockNumber");
const BIG_ID = "9007199254740993";
const call = (id: string, method: string) => `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":[]}`;
const HEAD = (label: string, length: number) =>
  `POST /${K}/ HTTP/1.1\r\nHost: ${label}.${DOMAIN}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

/** Writes `text` one byte every `everyMs` until done or the connection closes; returns bytes written. */
function trickle(conn: RawConnection, text: string, everyMs: number): { sent(): number; stop(): number } {
  let sent = 0;
  const timer = setInterval(() => {
    if (sent >= text.length || conn.isClosed()) return;
    conn.socket.write(text.charAt(sent));
    sent++;
  }, everyMs);
  void conn.closed.then(() => clearInterval(timer));
  return {
    sent: () => sent,
    stop() {
      clearInterval(timer);
      return sent;
    },
  };
}

/** Resolves once the gateway has read the head of its next request (node:http's `request` event). */
function nextRequest(gw: RunningGateway): Promise<void> {
  return within(
    new Promise<void>((resolve) => gw.gateway.server.once("request", () => resolve())),
    5000,
    "the gateway reading the request's head",
  );
}

/** Settles with the promise's value, or rejects after `ms` (a guard, not an assertion on timing). */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer));
}

/** The gateway's log lines since `before`, once `count` access-log lines are among them. */
async function logsSince(gw: RunningGateway, before: number, count: number, what: string) {
  const lines = () => gw.logs.slice(before);
  const access = () => lines().filter((line) => line.includes('"msg":"request"'));
  await eventually(() => access().length >= count, 5000, what);
  return { lines, access };
}

describe("slow clients (small server limits)", () => {
  let gw: RunningGateway;
  let node: LoopbackNode;

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a" }));
    gw = await startGateway({
      upstreams: { eth: [node.url] },
      limits: { requestTimeoutMs: 1000, headersTimeoutMs: 1000, connectionsCheckingIntervalMs: 100 },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("a body trickled one byte every 200 ms gets 408 after requestTimeout; another client is served meanwhile", async () => {
    node.requests.length = 0;
    const logsBefore = gw.logs.length;
    const conn = await openRaw(gw.port);
    const started = performance.now();
    const headRead = nextRequest(gw);
    await conn.write(HEAD("eth", BLOCK_NUMBER.length));
    const slow = trickle(conn, BLOCK_NUMBER, 200); // would take ~12 s to finish
    let slowSettled = false;
    void conn.response.then(() => {
      slowSettled = true;
    });

    // the slow request is in the gateway, its body coming a byte at a time
    await headRead;
    await eventually(() => slow.sent() >= 1, 5000, "the body's first byte sent");
    const normal = await gw.call("eth", `/${K}/`, { body: rpcBody("eth_blockNumber", [], 2) });
    expect(normal.status).toBe(200);
    expect(normal.text).toBe('{"jsonrpc":"2.0","id":2,"result":"0x2a"}');
    expect(slowSettled).toBe(false);

    const response = await within(conn.response, 8000, "the 408");
    const sent = slow.stop();
    expect(response?.status).toBe(408);
    expect(performance.now() - started).toBeLessThan(5000); // the default requestTimeout is 30 s
    expect(sent).toBeLessThan(BLOCK_NUMBER.length);
    await within(conn.closed, 5000, "the close after 408");
    // Only the normal client's call reached the node.
    expect(node.requests).toHaveLength(1);
    expect(node.requests[0]?.body).toBe(rpcBody("eth_blockNumber", [], 2));
    // Let the slow request's handler finish (its access-log line) before the next test reads the logs.
    await logsSince(gw, logsBefore, 2, "the slow request's access-log line");
  });

  it("a request that timed out mid-body is logged as the client's failure, not as a gateway error", async () => {
    const logsBefore = gw.logs.length;
    const conn = await openRaw(gw.port);
    await conn.write(`${HEAD("eth", BLOCK_NUMBER.length)}{`);
    const response = await within(conn.response, 8000, "the 408");
    expect(response?.status).toBe(408);
    await logsSince(gw, logsBefore, 1, "the timed-out request's access-log line");
    // and a normal call's after it: what the timed-out request's handling logged is in by then
    expect((await gw.call("eth", `/${K}/`, { body: BLOCK_NUMBER })).status).toBe(200);
    const { lines, access } = await logsSince(gw, logsBefore, 2, "the next call's access-log line");
    // docs/errors.md: INTERNAL and an "unhandled" error line are for gateway bugs; a client that went away
    // or timed out is not one, and its access-log line must not record a success.
    expect.soft(lines().filter((line) => line.includes('"level":"error"'))).toEqual([]);
    expect.soft(access()[0]).not.toContain('"status":200');
  });

  it("a request timed out mid-body: its 408 carries the id its access line names", async () => {
    const logsBefore = gw.logs.length;
    const conn = await openRaw(gw.port);
    const id = "slow-body-7f3a";
    await conn.write(
      `POST /${K}/ HTTP/1.1\r\nHost: eth.${DOMAIN}\r\nContent-Type: application/json\r\nX-Request-Id: ${id}\r\nContent-Length: ${BLOCK_NUMBER.length}\r\n\r\n{`,
    );
    const response = await within(conn.response, 8000, "the 408");
    expect(response?.status).toBe(408);
    const { access } = await logsSince(gw, logsBefore, 1, "the timed-out request's access-log line");
    expect(access()[0]).toContain(`"requestId":"${id}"`);
    // docs/operations.md: every answer of the data plane carries the request's id, so that a caller who
    // quotes it lets the operator find the line
    expect(response?.headers["x-request-id"]).toBe(id);
  });

  it("a client that hangs up halfway through its body is logged as gone (499), and nothing goes upstream", async () => {
    node.requests.length = 0;
    const logsBefore = gw.logs.length;
    const conn = await openRaw(gw.port);
    const headRead = nextRequest(gw);
    await conn.write(`${HEAD("eth", BLOCK_NUMBER.length)}${BLOCK_NUMBER.slice(0, 10)}`);
    await headRead; // the gateway is reading the body
    conn.close();
    const { lines, access } = await logsSince(
      gw,
      logsBefore,
      1,
      "the access-log line of the client that left",
    );
    expect(access()[0]).toContain('"error":"CLIENT_CLOSED"');
    expect(access()[0]).toContain('"status":499');
    expect(lines().filter((line) => line.includes('"level":"error"'))).toEqual([]);
    expect(node.requests).toEqual([]);
    expect((await gw.call("eth", `/${K}/`, { body: BLOCK_NUMBER })).status).toBe(200);
  });

  it("a client sending its headers one byte every 200 ms (slowloris) is cut after headersTimeout", async () => {
    node.requests.length = 0;
    const logsBefore = gw.logs.length;
    const conn = await openRaw(gw.port);
    const started = performance.now();
    await conn.write(`POST /${K}/ HTTP/1.1\r\nHost: eth.${DOMAIN}\r\n`);
    const slow = trickle(conn, `X-Slow: ${"a".repeat(200)}\r\n`, 200);

    await eventually(() => slow.sent() >= 1, 5000, "the headers trickling");
    const normal = await gw.call("eth", `/${K}/`, { body: BLOCK_NUMBER });
    expect(normal.status).toBe(200);
    expect(conn.isClosed()).toBe(false);

    await within(conn.closed, 8000, "the cut");
    slow.stop();
    expect(performance.now() - started).toBeLessThan(5000); // the default headersTimeout is 10 s
    const response = await conn.response;
    // Node answers a header timeout with a bodiless 408, or just closes.
    if (response !== undefined) expect(response.status).toBe(408);
    expect(node.requests).toHaveLength(1);
    expect(gw.logs.slice(logsBefore).join("")).not.toContain('"level":"error"');
  });

  it("a body declared larger than the limit gets 413 at once, and the connection is closed, not drained", async () => {
    node.requests.length = 0;
    const conn = await openRaw(gw.port);
    // 50 MB declared, a few bytes sent: the answer must not wait for the rest, nor read it afterwards
    await conn.write(`${HEAD("eth", 50_000_000)}{"jsonrpc"`);
    const answer = await conn.response;
    expect(answer?.status).toBe(413);
    expect(answer?.headers.connection).toBe("close");
    expect(JSON.parse(answer?.text ?? "{}").error.data.code).toBe("BODY_TOO_LARGE");
    await Promise.race([
      conn.closed,
      new Promise((_, reject) => setTimeout(() => reject(new Error("connection kept open")), 5000)),
    ]);
    expect(node.requests).toHaveLength(0);
  });

  it("a refusal before the body is read closes the connection only when the unread body is over the limit", async () => {
    const refuse = async (length: number) => {
      const conn = await openRaw(gw.port);
      const head = HEAD("eth", length).replace(`/${K}/`, "/FNnotakey000000000000000000000000/");
      await conn.write(head);
      const answer = await conn.response;
      conn.close();
      return answer;
    };
    const big = await refuse(50_000_000);
    expect(big?.status).toBe(401);
    expect(big?.headers.connection).toBe("close");
    const small = await refuse(BLOCK_NUMBER.length);
    expect(small?.status).toBe(401);
    expect(small?.headers.connection).toBe("keep-alive");
  });

  it("still serves a normal request afterwards", async () => {
    const r = await gw.call("eth", `/${K}/`, { body: BLOCK_NUMBER });
    expect(r.status).toBe(200);
  });
});

describe("bad upstreams", () => {
  const MAX_RESPONSE = 64 * 1024;
  let gw: RunningGateway;
  let healthy: LoopbackNode;
  let hung: { port: number; received: number; close(): Promise<void> };
  let declaredBig: Server;
  let chunkedBig: Server;

  beforeAll(async () => {
    healthy = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x38" }));
    hung = await startHungServer();
    const big = `{"jsonrpc":"2.0","id":1,"result":"0x${"0".repeat(4 * MAX_RESPONSE)}"}`;
    declaredBig = await startHttp((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": String(big.length) });
      res.end(big);
    });
    chunkedBig = await startHttp((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }); // no length: chunked
      for (let at = 0; at < big.length; at += 8192) res.write(big.slice(at, at + 8192));
      res.end();
    });
    const closedPort = await freePort();
    gw = await startGateway({
      upstreams: {
        eth: [`http://127.0.0.1:${hung.port}`],
        bsc: [healthy.url],
        avax: [`http://127.0.0.1:${closedPort}`],
        btc: [`http://127.0.0.1:${(declaredBig.address() as AddressInfo).port}`],
        zil: [`http://127.0.0.1:${(chunkedBig.address() as AddressInfo).port}`],
      },
      limits: {
        upstream: { ...DEFAULT_LIMITS.upstream, headersTimeoutMs: 500, maxResponseBytes: MAX_RESPONSE },
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([healthy?.close(), hung?.close(), closeHttp(declaredBig), closeHttp(chunkedBig)]);
  });

  it("a hung upstream gives 504 UPSTREAM_TIMEOUT within its headers timeout; a healthy one keeps serving", async () => {
    healthy.requests.length = 0;
    const started = performance.now();
    let hungSettled = false;
    const stuck = Promise.all(
      [1, 2, 3].map((id) => gw.call("eth", `/${K}/`, { body: rpcBody("eth_blockNumber", [], id) })),
    ).finally(() => {
      hungSettled = true;
    });
    // Wait until the hung node holds all three requests, then use another network meanwhile.
    await eventually(() => hung.received >= 3, 5000, "the hung node receiving the calls");
    expect(hungSettled).toBe(false);
    const others = await Promise.all(
      [1, 2, 3, 4, 5].map((id) => gw.call("bsc", `/${K}/`, { body: rpcBody("eth_blockNumber", [], id) })),
    );
    for (const [i, r] of others.entries()) {
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ jsonrpc: "2.0", id: i + 1, result: "0x38" });
    }
    expect(healthy.requests).toHaveLength(5);

    const timedOut = await within(stuck, 8000, "the 504s");
    expect(performance.now() - started).toBeLessThan(5000); // the default headers timeout is 10 s
    for (const r of timedOut) {
      expect(r.status).toBe(504);
      expect(r.json).toMatchObject({
        jsonrpc: "2.0",
        error: { code: -32015, data: { code: "UPSTREAM_TIMEOUT" } },
      });
    }
  });

  it("an upstream refusing connections (a closed port) gives 503 NO_UPSTREAM", async () => {
    const r = await gw.call("avax", `/${K}/`, { body: rpcBody("eth_blockNumber", [], 4) });
    expect(r.status).toBe(503);
    expect(r.json).toMatchObject({
      jsonrpc: "2.0",
      error: { code: -32011, data: { code: "NO_UPSTREAM", reason: "no upstream tried could be reached" } },
    });
  });

  it("an upstream declaring a body over maxResponseBytes gives 502 UPSTREAM_RESPONSE_TOO_LARGE", async () => {
    const r = await gw.call("btc", `/${K}/`, {
      body: '{"jsonrpc":"1.0","id":5,"method":"getblockcount","params":[]}',
    });
    expect(r.status).toBe(502);
    // a 1.0 call's error in 1.0's shape, as bitcoind's are (registry envelope legacyReplies)
    expect(r.json).toMatchObject({
      result: null,
      id: 5,
      error: { code: -32020, data: { code: "UPSTREAM_RESPONSE_TOO_LARGE" } },
    });
    expect(r.json).not.toHaveProperty("jsonrpc");
    expect(r.text.length).toBeLessThan(MAX_RESPONSE);
  });

  it("a batch's calls get such an error each in its own framing's shape: 1.0's where bitcoind answers it so", async () => {
    const r = await gw.call("btc", `/${K}/`, {
      body: '[{"jsonrpc":"1.0","id":"a","method":"getblockcount","params":[]},{"jsonrpc":"2.0","id":"b","method":"getblockcount","params":[]},{"id":"c","method":"getblockcount","params":[]}]',
    });
    expect(r.status).toBe(502);
    const [a, b, c] = r.json as Record<string, unknown>[];
    expect(a).toMatchObject({
      result: null,
      id: "a",
      error: { data: { code: "UPSTREAM_RESPONSE_TOO_LARGE" } },
    });
    expect(a).not.toHaveProperty("jsonrpc");
    expect(b).toMatchObject({
      jsonrpc: "2.0",
      id: "b",
      error: { data: { code: "UPSTREAM_RESPONSE_TOO_LARGE" } },
    });
    expect(b).not.toHaveProperty("result");
    // no jsonrpc member is 1.0's framing too
    expect(c).toMatchObject({ result: null, id: "c" });
  });

  it("a chunked upstream body growing past maxResponseBytes is cut: the client never gets the whole body", async () => {
    const logsBefore = gw.logs.length;
    const body = rpcBody("GetLatestTxBlock", [], 6);
    const conn = await openRaw(gw.port);
    await conn.write(`${HEAD("zil", body.length)}${body}`);
    await within(conn.closed, 8000, "the cut");
    const response = await conn.response;
    expect(response).toBeDefined();
    // The status had gone out before the cap was reached; the body's framing never completes.
    expect(response?.status).toBe(200);
    expect(response?.complete).toBe(false);
    expect(response?.text.length ?? 0).toBeLessThan(2 * MAX_RESPONSE);
    // The gateway cut the client, so the access log names the upstream's fault, not a client that left.
    const access = () => gw.logs.slice(logsBefore).find((line) => line.includes('"label":"zil"'));
    await eventually(() => access() !== undefined, 5000, "the cut request's access-log line");
    expect(access()).toContain('"error":"UPSTREAM_RESPONSE_TOO_LARGE"');
  });

  it("those upstream errors echo the caller's id, as every error on a readable request does", async () => {
    // docs/errors.md: the id is null only when the request could not be read.
    const cases = [
      { label: "eth", body: call(BIG_ID, "eth_blockNumber"), id: BIG_ID, status: 504 },
      { label: "avax", body: call('"req-42"', "eth_blockNumber"), id: '"req-42"', status: 503 },
      { label: "btc", body: call('{"n":43}', "getblockcount"), id: '{"n":43}', status: 502 },
    ];
    const answers = await Promise.all(cases.map((c) => gw.call(c.label, `/${K}/`, { body: c.body })));
    for (const [i, c] of cases.entries()) {
      const r = answers[i];
      expect(r?.status).toBe(c.status);
      expect.soft(r?.text, `${c.label} (${c.status})`).toContain(`"id":${c.id},`);
    }
  });

  it("still serves a healthy network after all of it", async () => {
    const r = await rawRequest(gw.port, `${HEAD("bsc", BLOCK_NUMBER.length)}${BLOCK_NUMBER}`);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ jsonrpc: "2.0", id: 1, result: "0x38" });
  });
});

/** A TCP server that accepts, reads, and never answers. */
async function startHungServer(): Promise<{ port: number; received: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const state = { port: 0, received: 0 };
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
    socket.on("data", (chunk: Buffer) => {
      if (chunk.includes("POST ")) state.received++;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.port = (server.address() as AddressInfo).port;
  return Object.assign(state, {
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  });
}

async function startHttp(handler: Parameters<typeof createHttpServer>[1]): Promise<Server> {
  const server = createHttpServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

function closeHttp(server: Server | undefined): Promise<void> {
  if (server === undefined) return Promise.resolve();
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
