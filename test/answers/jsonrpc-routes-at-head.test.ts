import { afterEach, describe, expect, it } from "vitest";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS } from "../support/gateway.js";
import type { Responder } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { type NodesBlockApart, nodesBlockApart } from "../support/nodes-block-apart.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { HEAD_ANSWERS, type TypicalAnswer } from "../support/typical-calls.js";

// A JSON-RPC node's plain HTTP routes that answer its head: nearcore's GET /status (chain/jsonrpc/src/lib.rs
// status_handler: the `status` method's StatusResponse, without the JSON-RPC envelope), which monitors and
// scripts poll for sync_info.latest_block_height, and Ogmios' GET /health (Ogmios.Data.Health: lastKnownTip,
// the node's tip, which @cardano-ogmios/client's getServerHealth reads). Two nodes a block apart: a caller
// who saw the head from the head call must never be told an older one by the route.

const H = 150_000_000;

/** The label's software, and its route answered as the software does from the node's state. */
function withRoute(route: string, body: (state: NodeState) => unknown) {
  return (endpoint: Endpoint, height: number): Responder => {
    const state = nodeState(endpoint, height);
    const software = softwareNode(endpoint, state);
    return (request) =>
      request.method === "GET" && request.url.split("?")[0] === route
        ? { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(body(state)) }
        : software(request);
  };
}

const nearStatus = (state: NodeState) => (HEAD_ANSWERS.status as TypicalAnswer).result(state);
const ogmiosHealth = ({ height }: NodeState) => ({
  startTime: "2025-01-01T00:00:00.000000Z",
  lastKnownTip: { slot: height * 20, id: height.toString(16).padStart(64, "0"), height },
  lastTipUpdate: "2025-01-01T00:00:00.000000Z",
  networkSynchronization: 1,
  currentEra: "conway",
  metrics: {
    activeConnections: 0,
    runtimeStats: {},
    sessionDurations: {},
    totalConnections: 0,
    totalMessages: 0,
    totalUnrouted: 0,
  },
  connectionStatus: "connected",
  currentEpoch: 500,
  slotInEpoch: 1000,
  version: "v6.11.0",
  network: "mainnet",
});

const cases: [string, string, (state: NodeState) => unknown, string, string, (answer: unknown) => number][] =
  [
    [
      "near",
      "/status",
      nearStatus,
      "status",
      "[]",
      (a) => (a as { sync_info: { latest_block_height: number } }).sync_info.latest_block_height,
    ],
    [
      "ada",
      "/health",
      ogmiosHealth,
      "queryNetwork/blockHeight",
      "{}",
      (a) => (a as { lastKnownTip: { height: number } }).lastKnownTip.height,
    ],
  ];

describe("a JSON-RPC node's HTTP route that answers its head never goes below the head served (two nodes a block apart)", () => {
  let apart: NodesBlockApart | undefined;
  afterEach(async () => {
    await apart?.close();
    apart = undefined;
  });

  for (const [label, route, body, headCall, params, heightOf] of cases)
    it(`${label}: the head call says H+1; 20 GET ${route} after it never say less`, async () => {
      apart = await nodesBlockApart(label, H, withRoute(route, body));
      const r = await apart.gw.call(label, `/${KEYS.all}/`, {
        body: `{"jsonrpc":"2.0","id":1,"method":"${headCall}","params":${params}}`,
        headers: { "content-type": "application/json" },
      });
      const result = (r.json as { result: unknown }).result;
      expect(typeof result === "number" ? result : heightOf(result), r.text).toBe(H + 1);
      const seen: number[] = [];
      for (let i = 0; i < 20; i++) {
        const got = await apart.gw.call(label, `/${KEYS.all}${route}`, { method: "GET" });
        expect(got.status, got.text).toBe(200);
        seen.push(heightOf(got.json));
      }
      expect(seen.filter((height) => height < H + 1)).toEqual([]);
    });
});
