import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// A read that found no node at the served head (the one there failed under it) is answered by a node below
// that head: the answer is its caller's alone. Kept at the head's epoch, other callers got the lower head's
// answer from the cache after every node had reached the head.
describe.each([
  ["alone", false],
  ["in a batch", true],
])("an answer from a node below the served head, over HTTP, asked %s", (_, inBatch) => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  let behindHead = "0x9";
  let failOnce = true;
  const B = `0x${"b".repeat(40)}`;
  beforeAll(async () => {
    const ahead = firstOf(
      (req) => {
        if (failOnce && req.body.includes("eth_getBalance") && req.body.includes(B)) {
          failOnce = false;
          return { status: 502, body: "bad gateway" };
        }
        return undefined;
      },
      jsonRpcResponder({ eth_blockNumber: "0xa", eth_getBalance: "0x2", eth_chainId: "0x1" }),
    );
    const behind = jsonRpcResponder({
      eth_blockNumber: () => behindHead,
      eth_getBalance: () => (behindHead === "0x9" ? "0x1" : "0x2"),
      eth_chainId: "0x1",
    });
    nodes = await Promise.all([startLoopbackNode(ahead), startLoopbackNode(behind)]);
    gw = await startGateway({
      upstreams: { eth: nodes.map((n, i) => ({ url: n.url, name: i === 0 ? "ahead" : "behind" })) },
      cache: { ...DEFAULT_CACHE, enabled: true, headMaxAgeMs: 60_000 },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    const read = () => gw.gateway.upstreams.group("eth", "/")?.members.map((m) => m.health.head);
    await eventually(() => read()?.join() === "10,9", 5_000, "heads read");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((n) => n.close()));
  });
  it("is not kept for other callers", async () => {
    const balance = async () => {
      const r = await gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [B, "latest"] }),
      });
      return { result: (r.json as { result: string }).result, cache: r.headers["x-cache"], status: r.status };
    };
    const balanceInBatch = async () => {
      const r = await gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify([
          { jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [B, "latest"] },
          { jsonrpc: "2.0", id: 2, method: "eth_chainId", params: [] },
        ]),
      });
      const answers = r.json as { id: number; result: string }[];
      return { result: answers.find((a) => a.id === 1)?.result };
    };
    const first = inBatch ? await balanceInBatch() : await balance();
    // the node at 10 failed it, and no other reached 10 within the wait: the node at 9 answered
    expect(first.result).toBe("0x1");
    // the behind node catches up: every node is at block 10 now
    behindHead = "0xa";
    await eventually(
      () =>
        gw.gateway.upstreams
          .group("eth", "/")
          ?.members.map((m) => m.health.head)
          .join() === "10,10",
      5_000,
      "caught up",
    );
    const second = await balance();
    expect(second.result).toBe("0x2");
    expect(second.cache).not.toBe("hit");
  });
});
