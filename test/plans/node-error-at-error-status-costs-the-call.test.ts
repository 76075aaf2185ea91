import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import type { UsageRecorder } from "../../src/keys/usage.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// What a user saw: bitcoind's own error to a 1.0-framed call (HTTP 500) cost 0 and counted as a node failure,
// while the same error framed 2.0 (HTTP 200) cost the call.
// docs/compute-units.md: a call "its node answered with the node's own error (... a method it does not
// serve) costs what the call costs, for the node did the work"; docs/upstreams.md: "an error some software
// answers at a 5xx status (the registry's nodeErrors): bitcoind's JSON-RPC error at 500 ... is an answer".
// Bitcoin Core (<= v27, and v28 for a call framed 1.0, as bitcoin-cli sends it) answers a call's own error at
// HTTP 500 (httprpc.cpp JSONErrorReply). The gateway passes it through as the node's answer, yet prices it
// as a node failure: X-Compute-Units 0, nothing in the quota or gateway_compute_units_total, and an error in
// the key's usage; the same call framed 2.0 (errors at 200) costs 10, and bitcoind's "Method not found" at
// 404 costs the call too. A customer's bill depends on how their library frames the envelope.
const btc = endpointsByLabel.get("btc");
if (btc === undefined) throw new Error("no btc in the registry");

describe("bitcoind's own error at HTTP 500 costs what the call costs", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  const recorded: Parameters<UsageRecorder["record"]>[] = [];
  beforeAll(async () => {
    node = await startLoopbackNode(softwareNode(btc, nodeState(btc, 800_000), [""]));
    gw = await startGateway({
      upstreams: { btc: [node.url] },
      usage: { record: (...args) => recorded.push(args) },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const call = async (jsonrpc: string) => {
    const before = await gw.metric("gateway_compute_units_total", { label: "btc" });
    const ok = { label: "btc", method: "getblockhash", result: "ok" };
    const servedBefore = await gw.metric("gateway_requests_total", ok);
    const answer = await gw.call("btc", `/${KEYS.all}/`, {
      body: JSON.stringify({ jsonrpc, id: 1, method: "getblockhash", params: [99_999_999] }),
      headers: { "content-type": "text/plain" },
    });
    const [, , calls, errors, units] = recorded.at(-1) ?? [];
    return {
      error: (answer.json as { error?: { code?: number } }).error?.code,
      header: answer.headers["x-compute-units"],
      metric: (await gw.metric("gateway_compute_units_total", { label: "btc" })) - before,
      // docs/operations.md: result `ok` is "served, including a node's own JSON-RPC error"
      served: (await gw.metric("gateway_requests_total", ok)) - servedBefore,
      usage: { calls, errors, units },
    };
  };

  it("framed 2.0 (HTTP 200): 10 CU", async () => {
    expect(await call("2.0")).toEqual({
      error: -8,
      header: "10",
      metric: 10,
      served: 1,
      usage: { calls: 1, errors: 0, units: 10 },
    });
  });

  it("framed 1.0 (HTTP 500, the same node error): 10 CU too", async () => {
    expect(await call("1.0")).toEqual({
      error: -8,
      header: "10",
      metric: 10,
      served: 1,
      usage: { calls: 1, errors: 0, units: 10 },
    });
  });
});
