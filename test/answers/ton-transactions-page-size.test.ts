import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { incomingCalls } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// toncenter's getTransactions(address, limit, …): ton-http-api holds its route's limit to 100
// (toncenter/ton-http-api@4b4e54fc pyTON/main.py get_transactions: Query(default=10, gt=0, le=100)), but
// its /jsonRPC handler calls the same function through json_rpc(), which only fills in defaults and reads
// text with int(): no bound. The worker pages through the account's history a liteserver query at a time
// until it has `limit` transactions: a limit of a million walked the whole history of a busy account.
// The reference (upstream-interfaces.md; answer-consistency.md §5: TON getTransactions `limit`) asks for
// the guard a trusted proxy has.

const H = 50_000_000;
const ADDRESS = "EQCD39VS5jcptHL8vMjEXrzGaRcCVYto7HUn4bpAOg8xqB2N";

describe("ton: getTransactions' limit is held to ton-http-api's own 100", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    const ton = endpointsByLabel.get("ton") as Endpoint;
    node = await startLoopbackNode(
      softwareNode(ton, nodeState(ton, H), [""], {
        answers: { getTransactions: { result: () => [] } },
      }),
    );
    const list = [{ url: node.url, name: "node-0" }];
    gw = await startGateway({
      upstreams: {
        ton: ton.mounts.length === 1 ? list : Object.fromEntries(ton.mounts.map((m) => [m.path, list])),
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "ton");
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const asked = () =>
    node.requests
      .flatMap((request) => incomingCalls(request)?.calls ?? [])
      .filter((call) => call.method === "getTransactions")
      .map((call) => (call.params as { limit?: unknown }).limit);
  const rpc = (params: unknown) =>
    gw.call("ton", `/${KEYS.all}/jsonRPC`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 4, method: "getTransactions", params }),
      headers: { "content-type": "application/json" },
    });

  it("a limit past 100 is refused PAGE_TOO_LARGE, text int() reads otherwise INVALID_REQUEST; 100 goes", async () => {
    node.requests.length = 0;
    for (const [limit, size] of [
      [1_000_000, 1_000_000],
      ["101", 101],
    ] as const) {
      const got = await rpc({ address: ADDRESS, limit });
      expect(got.status, String(limit)).toBe(413);
      expect(got.json).toMatchObject({
        error: { data: { code: "PAGE_TOO_LARGE", method: "getTransactions", size, refuseAbove: 100 } },
      });
    }
    // Python's int() reads "1_000_000" as a million
    const underscored = await rpc({ address: ADDRESS, limit: "1_000_000" });
    expect(underscored.json).toMatchObject({ error: { data: { code: "INVALID_REQUEST" } } });
    // the route form reaches the node as the same JSON-RPC call
    const route = await gw.call("ton", `/${KEYS.all}/api/v2/getTransactions?address=${ADDRESS}&limit=5000`, {
      method: "GET",
    });
    expect(route.json).toMatchObject({ error: { data: { code: "PAGE_TOO_LARGE", size: 5000 } } });
    for (const params of [{ address: ADDRESS, limit: 100 }, { address: ADDRESS }]) {
      const got = await rpc(params);
      expect(got.status, JSON.stringify(params)).toBe(200);
    }
    expect(asked()).toEqual([100, undefined]);
  });
});
