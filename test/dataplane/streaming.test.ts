import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";

// Tezos' GET /monitor/heads/main is a long-lived chunked stream: relayed chunk by chunk as it arrives,
// never buffered, never cut by the request or socket timeouts, closed when either side goes away.
describe("streaming REST routes", () => {
  let node: Server;
  let gw: RunningGateway;
  const open = new Set<ServerResponse>();
  let closedByClient = 0;

  beforeAll(async () => {
    node = createServer((req, res) => {
      if (req.url !== "/monitor/heads/main") return res.writeHead(404).end();
      res.writeHead(200, { "content-type": "application/json" });
      res.flushHeaders();
      open.add(res);
      res.on("close", () => {
        if (open.delete(res)) closedByClient++;
      });
    });
    await new Promise<void>((resolve) => node.listen(0, "127.0.0.1", resolve));
    const { port } = node.address() as AddressInfo;
    gw = await startGateway({
      upstreams: { xtz: [`http://127.0.0.1:${port}`] },
      // Timeouts far shorter than the stream's life: the stream must outlive them.
      limits: {
        requestTimeoutMs: 300,
        headersTimeoutMs: 300,
        socketIdleTimeoutMs: 300,
        connectionsCheckingIntervalMs: 50,
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    node?.closeAllConnections();
    node?.close();
  });

  const push = (level: number) => {
    for (const res of open) res.write(`{"hash":"BL${level}","level":${level}}\n`);
  };

  it("delivers each head as it is pushed, past every timeout, until the client leaves", async () => {
    const response = await request(`${gw.origin}/${KEYS.all}/monitor/heads/main`, {
      headers: { host: "xtz.gw.test" },
    });
    expect(response.statusCode).toBe(200);
    const reader = response.body[Symbol.asyncIterator]();
    for (let level = 1; level <= 3; level++) {
      push(level);
      const chunk = await reader.next();
      expect(chunk.value?.toString()).toBe(`{"hash":"BL${level}","level":${level}}\n`);
      // longer than requestTimeout, headersTimeout and the socket idle timeout
      await new Promise((resolve) => setTimeout(resolve, 400));
    }
    response.body.destroy();
    const deadline = Date.now() + 3000;
    while (closedByClient === 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(closedByClient).toBe(1);
  });

  it("ends the client's stream when the node goes away", async () => {
    const response = await request(`${gw.origin}/${KEYS.all}/monitor/heads/main`, {
      headers: { host: "xtz.gw.test" },
    });
    push(9);
    const reader = response.body[Symbol.asyncIterator]();
    expect((await reader.next()).value?.toString()).toContain('"level":9');
    for (const res of open) {
      open.delete(res);
      res.end();
    }
    const rest = await reader.next();
    expect(rest.done).toBe(true);
  });
});

// A stream holds its node connection for as long as its caller listens. Streams have a pool of their own,
// so however many a caller opens the label's reads still reach the node; and a request that waits for a
// connection (here a second stream, with one connection a pool) still ends at the call's deadline.
describe("streams beside reads, one connection per pool", () => {
  let node: Server;
  let gw: RunningGateway;
  const open = new Set<ServerResponse>();

  beforeAll(async () => {
    node = createServer((req, res) => {
      if (req.url === "/monitor/heads/main") {
        res.writeHead(200, { "content-type": "application/json" });
        res.flushHeaders();
        open.add(res);
        return;
      }
      if (req.url === "/chains/main/blocks/head/header")
        return res.writeHead(200, { "content-type": "application/json" }).end('{"level":7}');
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => node.listen(0, "127.0.0.1", resolve));
    const { port } = node.address() as AddressInfo;
    gw = await startGateway({
      upstreams: { xtz: [`http://127.0.0.1:${port}`] },
      limits: { upstream: { ...DEFAULT_LIMITS.upstream, connections: 1, deadlineMs: 500 } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    for (const res of open) res.destroy();
    node?.closeAllConnections();
    node?.close();
  });

  it("a read is answered while a stream holds the node's connection; a stream that finds none ends at the deadline", async () => {
    const stream = await request(`${gw.origin}/${KEYS.all}/monitor/heads/main`, {
      headers: { host: "xtz.gw.test" },
    });
    expect(stream.statusCode).toBe(200);
    const read = await gw.call("xtz", `/${KEYS.all}/chains/main/blocks/head/header`, { method: "GET" });
    expect(read.status).toBe(200);
    expect(read.json).toEqual({ level: 7 });
    const started = performance.now();
    const second = await gw.call("xtz", `/${KEYS.all}/monitor/heads/main`, { method: "GET" });
    expect(second.status).toBe(504);
    expect(second.json).toMatchObject({ error: { code: "UPSTREAM_TIMEOUT" } });
    // the deadline, give or take the clock's tick and a loaded machine: not undici's 30 s headers timeout
    expect(performance.now() - started).toBeLessThan(5_000);
    stream.body.destroy();
  });
});
