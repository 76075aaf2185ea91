import { Agent, request as httpRequest } from "node:http";
import type { Socket } from "node:net";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { createLogger } from "../../src/log.js";
import { Readiness } from "../../src/proxy/readiness.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { eventually } from "../support/eventually.js";
import { type FaultyNode, startFaultyNode } from "../support/faulty-node.js";
import { DOMAIN, KEYS, TEST_KEYS } from "../support/gateway.js";
import { firstOf, jsonRpcResponder, startLoopbackNode } from "../support/loopback-node.js";

// GET /healthz and GET /readyz on the operator listener, through a proxy's life: ready once it listens,
// not ready while its only node is lost and ready again when the node is back, and not ready through a
// graceful shutdown's delay while the public port still serves, until the listener closes.

const SHUTDOWN_DELAY_MS = 600;

/** A call over node:http with `agent`: its status, its Connection header and the socket it went on. */
function rawCall(port: number, agent: Agent, body: string) {
  return new Promise<{ status: number; connection: string | undefined; socket: Socket }>(
    (resolve, reject) => {
      const req = httpRequest(
        {
          host: "127.0.0.1",
          port,
          path: `/${KEYS.all}/`,
          method: "POST",
          agent,
          headers: { host: `eth.${DOMAIN}`, "content-type": "application/json" },
        },
        (res) => {
          res.resume();
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              connection: res.headers.connection,
              socket: req.socket as Socket,
            }),
          );
        },
      );
      req.on("error", reject);
      req.end(body);
    },
  );
}

describe("health and readiness", () => {
  let node: FaultyNode;
  let proxy: RunningProxy;

  const probe = async (path: "/healthz" | "/readyz") => {
    const r = await request(`http://127.0.0.1:${proxy.operatorPort}${path}`);
    return { status: r.statusCode, body: (await r.body.json()) as { ready?: boolean; reasons?: string[] } };
  };
  const serve = async () => {
    const r = await request(`http://127.0.0.1:${proxy.port}/${KEYS.all}/`, {
      method: "POST",
      headers: { host: `eth.${DOMAIN}`, "content-type": "application/json" },
      body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
    });
    await r.body.text();
    return r.statusCode;
  };
  const rawServe = (agent: Agent) =>
    rawCall(proxy.port, agent, '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}');
  /** Polls /readyz until its status is `status`, and returns the body that said so. */
  const readyzUntil = async (status: number, what: string) => {
    const started = performance.now();
    for (;;) {
      const last = await probe("/readyz");
      if (last.status === status) return last.body;
      if (performance.now() - started > 5000)
        throw new Error(`not within 5 s: ${what}; last ${JSON.stringify(last)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  beforeAll(async () => {
    node = await startFaultyNode((h) => jsonRpcResponder({ eth_blockNumber: `0x${h.toString(16)}` }));
    proxy = await runProxy(
      {
        ...DEFAULT_CONFIG,
        domain: DOMAIN,
        listen: { host: "127.0.0.1", port: 0 },
        operator: { listen: { host: "127.0.0.1", port: 0 } },
        keys: TEST_KEYS,
        upstreams: { eth: [{ url: node.url, name: "only-node" }] },
        health: {
          ...DEFAULT_HEALTH,
          probeIntervalMs: 50,
          probeTimeoutMs: 200,
          failAfter: 2,
          recoverAfter: 1,
        },
        limits: { ...DEFAULT_LIMITS, shutdownDelayMs: SHUTDOWN_DELAY_MS, drainTimeoutMs: 1000 },
        log: { level: "silent", access: false },
      },
      createLogger("silent"),
    );
  });
  afterAll(async () => {
    await proxy?.close().catch(() => {});
    await node?.close();
  });

  it("is not ready before its public listener listens, whatever its upstreams", () => {
    const readiness = new Readiness({ groups: () => [] });
    expect(readiness.report()).toEqual({
      ready: false,
      reasons: ["not listening yet", "no upstream of any label is in rotation"],
    });
  });

  it("is alive once started, and ready once its upstream's first probe put it in rotation", async () => {
    expect(await probe("/healthz")).toEqual({ status: 200, body: { status: "alive" } });
    expect(await readyzUntil(200, "ready after the first probe")).toEqual({ ready: true, reasons: [] });
  });

  it("turns not ready when its only upstream is lost, and ready again when it is back", async () => {
    await node.kill();
    const body = await readyzUntil(503, "not ready once the node is out of rotation");
    expect(body).toEqual({ ready: false, reasons: ["no upstream of any label is in rotation"] });
    expect((await probe("/healthz")).status).toBe(200); // alive all the same: restarting it would not help
    await node.revive();
    await readyzUntil(200, "ready again once the node answers its probes");
    expect(await serve()).toBe(200);
  });

  it("turns not ready as a graceful shutdown begins, and keeps serving until its listener closes", async () => {
    // a client's idle keep-alive connection, from before the stop
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const idle = await rawServe(agent);
    expect(idle.connection).toBe("keep-alive");
    const idleClosed = new Promise<void>((resolve) => idle.socket.once("close", () => resolve()));
    const started = performance.now();
    const closed = proxy.close();
    const body = await readyzUntil(503, "not ready as the shutdown begins");
    expect(body.reasons).toContain("shutting down");
    expect(performance.now() - started).toBeLessThan(SHUTDOWN_DELAY_MS);
    // the idle one is closed as the stop begins, while the client can still open another; an answer
    // from here on closes its own: none is left for the listener's close to cut under a client reusing it
    await idleClosed;
    const during = await rawServe(agent);
    expect(during.status).toBe(200); // a balancer that has not noticed yet loses nothing
    expect(during.connection).toBe("close");
    agent.destroy();
    expect(await serve()).toBe(200);
    await closed;
    expect(performance.now() - started).toBeGreaterThanOrEqual(SHUTDOWN_DELAY_MS - 5);
    await expect(serve()).rejects.toThrow(/ECONNREFUSED/);
    await expect(probe("/readyz")).rejects.toThrow(/ECONNREFUSED/);
  });
});

// A request in flight as a stop begins was told keep-alive before the stop: its connection is closed once
// it is idle, not left for the listener's close to cut under a client that reuses it.
describe("a stop's delay and a request in flight as it begins", () => {
  it("closes that request's connection once its answer is out, well before the listener closes", async () => {
    // the node answers once the stop has begun: the call is in flight as it does
    let stopBegun: () => void = () => {};
    const begun = new Promise<void>((resolve) => {
      stopBegun = resolve;
    });
    const node = await startLoopbackNode(
      firstOf(
        async (request) => {
          if (!request.body.includes("eth_getBalance")) return undefined;
          await begun;
          return { status: 200, body: '{"jsonrpc":"2.0","id":1,"result":"0x1"}' };
        },
        jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1" }),
      ),
    );
    const proxy = await runProxy(
      {
        ...DEFAULT_CONFIG,
        domain: DOMAIN,
        listen: { host: "127.0.0.1", port: 0 },
        operator: undefined,
        keys: TEST_KEYS,
        upstreams: { eth: [{ url: node.url, name: "only-node" }] },
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 50 },
        limits: { ...DEFAULT_LIMITS, shutdownDelayMs: 3_000, drainTimeoutMs: 1000 },
        log: { level: "silent", access: false },
      },
      createLogger("silent"),
    );
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const answered = rawCall(
        proxy.port,
        agent,
        '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x0000000000000000000000000000000000000000","latest"]}',
      );
      // the call is at the node, which answers it once the stop has begun
      await eventually(
        () => node.requests.some((r) => r.body.includes("eth_getBalance")),
        2_000,
        "the call at the node",
      );
      const closed = proxy.close();
      stopBegun();
      const { socket } = await answered;
      const started = performance.now();
      await new Promise<void>((resolve) =>
        socket.destroyed ? resolve() : socket.once("close", () => resolve()),
      );
      // the listener closes 3 s after the stop began; the idle connection went long before
      expect(performance.now() - started).toBeLessThan(1_500);
      await closed;
    } finally {
      agent.destroy();
      await node.close();
    }
  });
});
