import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

/** How long the slow node takes to answer: a call out at it, not a wait of the test's. */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// docs/operations.md: an attempt another node outran is `dismissed` in gateway_upstream_attempts_total, not
// `failed`; gateway_upstream_error_ratio is the share of the node's last calls and probes that failed. The
// node a hedge outran answered, only later: its ratio does not move, though its share of calls may.
describe("a node a hedge outran, in its error ratio", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;
  let slow = false;
  let firstSeen: string | undefined;
  const answer = jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1" });
  beforeAll(async () => {
    for (const name of ["n1", "n2"])
      nodes.push(
        await startLoopbackNode(async (seen) => {
          if (slow && firstSeen === undefined) {
            firstSeen = name;
            await sleep(700);
          }
          return answer(seen);
        }),
      );
    gw = await startGateway({
      upstreams: { eth: nodes.map((n, i) => ({ url: n.url, name: `n${i + 1}` })) },
      limits: { upstream: { ...DEFAULT_LIMITS.upstream, hedgeMinMs: 100, hedgeMaxMs: 100 } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
  });

  const ratio = (upstream: string) => gw.metric("gateway_upstream_error_ratio", { upstream });
  const dismissed = (upstream: string) =>
    gw.metric("gateway_upstream_attempts_total", { upstream, outcome: "dismissed" });

  it("is dismissed, and its error ratio stays where it was", async () => {
    const before = { n1: await ratio("n1"), n2: await ratio("n2") };
    const dismissedBefore = { n1: await dismissed("n1"), n2: await dismissed("n2") };
    slow = true;
    const r = await gw.call("eth", `/${KEYS.all}/`, { body: rpcBody("eth_blockNumber", [], 5) });
    expect(r.status).toBe(200);
    expect(firstSeen).toBeDefined();
    const first = firstSeen as "n1" | "n2";
    // the outrun attempt ends once its node answers, 700 ms after it was asked
    await eventually(
      async () => (await dismissed(first)) - dismissedBefore[first] > 0,
      5_000,
      "the outrun attempt ended",
    );
    expect((await dismissed(first)) - dismissedBefore[first]).toBe(1);
    expect(await ratio(first)).toBe(before[first]);
  });
});
