import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { type FaultyNode, startFaultyNode } from "../support/faulty-node.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { jsonRpcResponder } from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";

// WebSocket connections and upstream health. Each upstream is a node with its HTTP port (what the prober
// asks: a fault-knob node) and its WebSocket port (a loopback WebSocket node), as a geth's 8545 and 8546.

interface Node {
  readonly http: FaultyNode;
  ws: LoopbackWsNode;
}

const PROBE_MS = 150;

describe("WebSocket connections go to upstreams in rotation, and move when theirs fails", () => {
  let a: Node;
  let b: Node;
  let gw: RunningGateway;
  const member = (name: string) =>
    gw.gateway.upstreams.group("eth", "/")?.members.find((m) => m.name === name);
  const state = (name: string) => member(name)?.health.state;
  /** In rotation on the word of a probe, not only as every node starts. */
  const probedHealthy = (name: string) =>
    state(name) === "healthy" && member(name)?.health.head !== undefined;

  const startNode = async (): Promise<Node> => ({
    http: await startFaultyNode((h) => jsonRpcResponder({ eth_blockNumber: `0x${h.toString(16)}` })),
    ws: await startLoopbackWsNode({ results: { eth_blockNumber: "0x10" } }),
  });

  /** A client connection through the gateway, with its close code once closed. */
  const connect = async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/${KEYS.all}`, { headers: { host: `eth.${DOMAIN}` } });
    const closed = new Promise<{ code: number; at: number }>((resolve) =>
      ws.once("close", (code) => resolve({ code, at: performance.now() })),
    );
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    return { ws, closed };
  };

  const startGatewayOnBoth = () =>
    startGateway({
      upstreams: {
        eth: [
          { url: a.http.url, ws: a.ws.wsUrl, name: "a" },
          { url: b.http.url, ws: b.ws.wsUrl, name: "b" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: PROBE_MS, probeTimeoutMs: 300, recoverAfter: 2 },
    });

  beforeAll(async () => {
    [a, b] = await Promise.all([startNode(), startNode()]);
    gw = await startGatewayOnBoth();
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.http.close(), b?.http.close(), a?.ws.close(), b?.ws.close()]);
  });
  beforeEach(async () => {
    for (const node of [a, b]) {
      node.http.fault = "none";
      await node.http.revive();
    }
    await eventually(() => probedHealthy("a") && probedHealthy("b"), 5000, "both in rotation");
  });

  it("a new connection goes to an upstream in rotation: none to a failing one", async () => {
    await a.http.kill();
    await eventually(() => state("a") === "failing", 10 * PROBE_MS, "a out of rotation");
    const before = [a.ws.connections.length, b.ws.connections.length];
    const clients = await Promise.all(Array.from({ length: 6 }, connect));
    expect([a.ws.connections.length - (before[0] ?? 0), b.ws.connections.length - (before[1] ?? 0)]).toEqual([
      0, 6,
    ]);
    for (const { ws } of clients) ws.close();
  });

  it("when the node of an open connection dies and no other is in rotation, the client is closed at once with 1014", async () => {
    await a.http.kill(); // so the connection lands on b
    await eventually(() => state("a") === "failing", 10 * PROBE_MS, "a out of rotation");
    const { closed } = await connect();
    expect(b.ws.openConnections()).toBeGreaterThan(0);
    const dying = performance.now();
    await b.ws.close(); // b's WebSocket port goes away with its sockets
    const { code, at } = await closed;
    expect(code).toBe(1014);
    expect(at - dying).toBeLessThan(500);
    b.ws = await startLoopbackWsNode({ results: { eth_blockNumber: "0x10" } });
    await gw.close();
    gw = await startGatewayOnBoth();
  });

  it("when the node of an open connection dies and the only other lags a few blocks, the connection moves there", async () => {
    await b.http.kill(); // so the connection lands on a
    await eventually(() => state("b") === "failing", 10 * PROBE_MS, "b out of rotation");
    const { ws, closed } = await connect();
    let gone = false;
    void closed.then(() => {
      gone = true;
    });
    // b comes back 5 blocks behind a: up, answering, out of rotation as lagging
    b.http.height = a.http.height - 5;
    await b.http.revive();
    await eventually(() => state("b") === "lagging", 5000, "b lagging");
    const onB = b.ws.connections.length;
    // a's WebSocket port goes away with its sockets, before the prober sees a fail: b is the one node left
    await a.ws.close();
    await eventually(() => b.ws.connections.length === onB + 1, 3000, "the connection's socket on b");
    const answer = new Promise<string>((resolve) => ws.once("message", (data) => resolve(String(data))));
    ws.send('{"jsonrpc":"2.0","id":8,"method":"eth_blockNumber","params":[]}');
    // b lags the head the label served: a read at the head goes over HTTP to a, whose HTTP still answers
    // (ws/head-reads.ts); the WebSocket fakes answer a fixed 0x10 of their own
    expect(JSON.parse(await answer)).toEqual({
      jsonrpc: "2.0",
      id: 8,
      result: `0x${a.http.height.toString(16)}`,
    });
    expect(gone).toBe(false);
    ws.close();
    b.http.height = a.http.height;
    a.ws = await startLoopbackWsNode({ results: { eth_blockNumber: "0x10" } });
    await gw.close();
    gw = await startGatewayOnBoth();
  });

  it("when the node of an open connection hangs, the connection moves to a node in rotation once the prober says so", async () => {
    await b.http.kill(); // so the connection lands on a
    await eventually(() => state("b") === "failing", 10 * PROBE_MS, "b out of rotation");
    const { ws, closed } = await connect();
    let gone = false;
    void closed.then(() => {
      gone = true;
    });
    await b.http.revive();
    await eventually(() => probedHealthy("b"), 5000, "b back in rotation");
    const onB = b.ws.connections.length;
    a.http.fault = "hang";
    await eventually(() => state("a") === "failing", 10 * PROBE_MS, "a out of rotation");
    await eventually(() => b.ws.connections.length === onB + 1, 3000, "the connection's socket on b");
    const answer = new Promise<string>((resolve) => ws.once("message", (data) => resolve(String(data))));
    ws.send('{"jsonrpc":"2.0","id":7,"method":"eth_blockNumber","params":[]}');
    expect(JSON.parse(await answer)).toEqual({ jsonrpc: "2.0", id: 7, result: "0x10" });
    expect(b.ws.latest().methods()).toEqual(["eth_blockNumber"]);
    expect(gone).toBe(false);
    ws.close();
  });
});
