import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

/** How long the node takes to answer: a call out at it, not a wait of the test's. */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// docs/operations.md: gateway_upstream_duration_seconds is "the answering node's own time, from sending to
// the last byte of its answer", and "the gateway's own share of a call is gateway_request_duration_seconds
// less gateway_upstream_duration_seconds for the same label" (the PromQL given there). A node asked once for
// three coalesced callers answered once: one observation of its time. The followers, who waited only part
// of that time, each add the node's whole time again, so the documented "gateway's share" goes negative.
describe("coalesced followers and the node's own time", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  const answer = jsonRpcResponder({ eth_chainId: "0x1" });
  beforeAll(async () => {
    node = await startLoopbackNode(async (seen) => {
      await sleep(600);
      return answer(seen);
    });
    gw = await startGateway({
      cache: { ...DEFAULT_CACHE, enabled: true },
      upstreams: { eth: [{ url: node.url, name: "n1" }] },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });
  const hist = async (name: string) => {
    const metric = gw.gateway.metrics?.all.find((m) => m.name === name);
    if (metric === undefined) throw new Error(`no metric ${name}`);
    const { values } = await metric.get();
    const pick = (suffix: string) =>
      values
        .filter(
          (v) =>
            v.labels.label === "eth" && String((v as { metricName?: string }).metricName).endsWith(suffix),
        )
        .reduce((s, v) => s + v.value, 0);
    return { sum: pick("_sum"), count: pick("_count") };
  };

  it("one node answer is one observation, and the gateway's share is not negative", async () => {
    const up0 = await hist("gateway_upstream_duration_seconds");
    const req0 = await hist("gateway_request_duration_seconds");
    const answered0 = await gw.metric("gateway_upstream_attempts_total", {
      upstream: "n1",
      outcome: "answered",
    });
    const leader = gw.call("eth", `/${KEYS.all}/`, { body: rpcBody("eth_chainId", [], 1) });
    // the followers join the leader's call while it is out at its node, which answers 600 ms later
    await eventually(() => node.requests.length === 1, 5_000, "the leader's call at its node");
    const followers = [2, 3].map((id) =>
      gw.call("eth", `/${KEYS.all}/`, { body: rpcBody("eth_chainId", [], id) }),
    );
    const all = await Promise.all([leader, ...followers]);
    expect(all.map((a) => a.headers["x-cache"])).toEqual(["miss", "coalesced", "coalesced"]);
    expect(node.requests.length).toBe(1);
    const up = await hist("gateway_upstream_duration_seconds");
    const req = await hist("gateway_request_duration_seconds");
    const answered =
      (await gw.metric("gateway_upstream_attempts_total", { upstream: "n1", outcome: "answered" })) -
      answered0;
    const moved = {
      answered,
      upstreamCount: up.count - up0.count,
      upstreamSeconds: up.sum - up0.sum,
      requestSeconds: req.sum - req0.sum,
    };
    expect(moved.answered).toBe(1);
    expect(moved.upstreamCount).toBe(1);
    expect(moved.requestSeconds - moved.upstreamSeconds).toBeGreaterThanOrEqual(0);
  });
});
