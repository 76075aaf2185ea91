import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { type FaultyNode, startFaultyNode } from "../support/faulty-node.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { jsonRpcResponder } from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";

// A label of four nodes, each with its HTTP port (what the prober asks) and its WebSocket port: three in
// rotation whose WebSocket servers all go, and one a few blocks behind. A connection moves to the lagging
// node rather than close, however many nodes in rotation refused its socket first.
interface Node {
  readonly http: FaultyNode;
  readonly ws: LoopbackWsNode;
}

const PROBE_MS = 150;

describe("a WebSocket connection whose nodes in rotation all refuse sockets", () => {
  let nodes: Node[] = [];
  let gw: RunningGateway;
  const state = (i: number) =>
    gw.gateway.upstreams.group("eth", "/")?.members.find((m) => m.name === `n${i}`)?.health.state;

  beforeAll(async () => {
    const start = async (): Promise<Node> => ({
      http: await startFaultyNode((h) => jsonRpcResponder({ eth_blockNumber: `0x${h.toString(16)}` })),
      ws: await startLoopbackWsNode({ results: { eth_blockNumber: "0x10" } }),
    });
    nodes = await Promise.all([start(), start(), start(), start()]);
    gw = await startGateway({
      upstreams: { eth: nodes.map((n, i) => ({ url: n.http.url, ws: n.ws.wsUrl, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: PROBE_MS, probeTimeoutMs: 300, recoverAfter: 2 },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.flatMap((n) => [n.http.close(), n.ws.close()]));
  });

  it("moves to the lagging node when its node dies and the other three in rotation refuse", async () => {
    const [n0, n1, n2, lag] = nodes as [Node, Node, Node, Node];
    await eventually(() => [0, 1, 2, 3].every((i) => state(i) === "healthy"), 5_000, "all in rotation");
    lag.http.height = n0.http.height - 5;
    await eventually(() => state(3) === "lagging", 5_000, "one node lagging");
    // two nodes in rotation (their HTTP answers) lose their WebSocket servers
    await Promise.all([n1.ws.close(), n2.ws.close()]);
    const client = new WebSocket(`ws://127.0.0.1:${gw.port}/${KEYS.all}`, {
      headers: { host: `eth.${DOMAIN}` },
    });
    let closed = false;
    client.once("close", () => {
      closed = true;
    });
    await new Promise<void>((resolve, reject) => {
      client.once("open", () => resolve());
      client.once("error", reject);
    });
    expect(n0.ws.openConnections()).toBe(1);
    const onLag = lag.ws.connections.length;
    // the connection's node goes too, before the prober sees it: the three in rotation refuse
    await n0.ws.close();
    await eventually(
      () => lag.ws.connections.length === onLag + 1,
      3_000,
      "the connection's socket on the lagging node",
    );
    const answer = new Promise<string>((resolve) => client.once("message", (data) => resolve(String(data))));
    client.send('{"jsonrpc":"2.0","id":3,"method":"eth_blockNumber","params":[]}');
    // its node lags the head the label served: a read at the head goes over HTTP to a node in rotation at
    // it (ws/head-reads.ts), whose HTTP still answers; the WebSocket fakes answer a fixed 0x10 of their own
    expect(JSON.parse(await answer)).toEqual({
      jsonrpc: "2.0",
      id: 3,
      result: `0x${n0.http.height.toString(16)}`,
    });
    expect(closed).toBe(false);
    // the nodes in rotation still refuse sockets: at each probe round the connection looks for a better
    // node, and never opens one on its own meanwhile (it opened and dropped one there each round)
    const probes = n0.http.requests.length;
    await eventually(() => n0.http.requests.length >= probes + 4, 3_000, "four probe rounds");
    expect(lag.ws.connections.length).toBe(onLag + 1);
    client.close();
  });
});
