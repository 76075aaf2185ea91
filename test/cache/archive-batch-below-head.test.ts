import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { parseJsonRpcBody } from "../../src/jsonrpc/scan.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import {
  firstOf,
  jsonRpcResponder,
  type LoopbackNode,
  type Responder,
  startLoopbackNode,
} from "../support/loopback-node.js";

// A batch whose read of old state a full node refused ("missing trie node", geth's trie.MissingNodeError,
// -32000) is answered by the archive nodes for that call, and its other answers stay the full node's: its
// answers joined from two tiers. Which full node gave them decides whether they may serve other callers
// (kept-answer.ts `sharable`): one read at the head by a node below the head the label served is its
// caller's alone, as for a batch whose answers were not joined (test/cache/cache-below-head.test.ts).

const B = `0x${"b".repeat(40)}`;
const OLD = `0x${"c".repeat(40)}`;

/** geth's refusal of state it no longer holds, else the balance by the node's head. */
function fullNode(head: () => string, balance: () => string): Responder {
  return (request) => {
    const parsed = parseJsonRpcBody(request.body, 1000);
    const answers = parsed.calls.map((call) => {
      const { method, params } = call.value as { method: string; params?: unknown[] };
      const id = call.members.get("id");
      const result = method === "eth_blockNumber" ? head() : method === "eth_chainId" ? "0x1" : balance();
      if (method === "eth_getBalance" && params?.[0] === OLD)
        return `{"jsonrpc":"2.0","id":${id},"error":{"code":-32000,"message":"missing trie node 1f2e3d4c5b6a79808f9e (path )"}}`;
      return `{"jsonrpc":"2.0","id":${id},"result":${JSON.stringify(result)}}`;
    });
    return { body: parsed.batch ? `[${answers.join(",")}]` : (answers[0] as string) };
  };
}

describe("a batch joined from an archive node's answer and a full node's below the served head", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  let behindHead = "0x9";
  let failOnce = true;

  beforeAll(async () => {
    const ahead = firstOf(
      (req) => {
        if (failOnce && req.body.includes("eth_getBalance") && req.body.includes(B)) {
          failOnce = false;
          return { status: 502, body: "bad gateway" };
        }
        return undefined;
      },
      fullNode(
        () => "0xa",
        () => "0x2",
      ),
    );
    const behind = fullNode(
      () => behindHead,
      () => (behindHead === "0x9" ? "0x1" : "0x2"),
    );
    const archive = jsonRpcResponder({ eth_blockNumber: "0xa", eth_getBalance: "0x5", eth_chainId: "0x1" });
    nodes = await Promise.all([
      startLoopbackNode(ahead),
      startLoopbackNode(behind),
      startLoopbackNode(archive),
    ]);
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: (nodes[0] as LoopbackNode).url, name: "ahead" },
          { url: (nodes[1] as LoopbackNode).url, name: "behind" },
        ],
        "eth-archive": [{ url: (nodes[2] as LoopbackNode).url, name: "archive" }],
      },
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

  it("keeps the full node's answer read at its lower head for no other caller", async () => {
    const batch = await gw.call("eth", `/${KEYS.all}`, {
      body: JSON.stringify([
        { jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [B, "latest"] },
        { jsonrpc: "2.0", id: 2, method: "eth_getBalance", params: [OLD, "0x1"] },
      ]),
    });
    const answers = batch.json as { id: number; result: string }[];
    // the node at 10 failed it, and no other reached 10 within the wait: the node at 9 answered, and the
    // archive node the read of old state it refused
    expect(answers.find((a) => a.id === 1)?.result).toBe("0x1");
    expect(answers.find((a) => a.id === 2)?.result).toBe("0x5");
    expect(batch.headers["x-upstream-tier"]).toBe("full+archive");
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
    const single = await gw.call("eth", `/${KEYS.all}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "eth_getBalance", params: [B, "latest"] }),
    });
    expect((single.json as { result: string }).result).toBe("0x2");
    expect(single.headers["x-cache"]).not.toBe("hit");
  });
});
