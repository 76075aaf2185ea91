import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";

// A label with one node (docs/upstreams.md, "Answers across nodes"): a read that names a block above the
// head its prober last saw goes to the node at once, since there is no other and the caller most often
// learned of the block from the node itself (a newHeads notification); it does not wait a block for a probe.

describe("a read naming a block on a label with one node", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(
      jsonRpcResponder({
        eth_chainId: "0x1",
        eth_blockNumber: "0x10",
        eth_getBlockByNumber: (params: unknown) => ({
          number: (params as string[])[0],
          hash: `0x${"ab".repeat(32)}`,
        }),
      }),
    );
    // one probe at the start: the node's head is known as 0x10 for the test's length
    gw = await startGateway({
      upstreams: { eth: [node.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("goes to the node at once, with no wait for its head", async () => {
    const answer = await gw.call("eth", `/${KEYS.all}/`, {
      body: rpcBody("eth_getBlockByNumber", ["0x12", false]),
    });
    expect(answer.status).toBe(200);
    expect((answer.json as { result: { number: string } }).result.number).toBe("0x12");
    const rules = new Map(gw.gateway.upstreams.group("eth", "/")?.answers.entries());
    expect(rules.get("head_wait")).toBeUndefined();
  });
});

// With the prober off (health.probeIntervalMs 0), a node's head is learnt only from its answers: a read
// held for a node at a head another instance served (shared through Redis) would wait about a block in vain
// on every call, then go to the same node.
describe("a read at a head no probe can see a node reach, with the prober off", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;

  beforeAll(async () => {
    nodes = await Promise.all(
      [0, 1].map(() => startLoopbackNode(jsonRpcResponder({ eth_chainId: "0x1", eth_blockNumber: "0x10" }))),
    );
    gw = await startGateway({
      upstreams: { eth: nodes.map((node, i) => ({ url: node.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 0 },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("goes to a node at once, with no wait for a head it cannot learn", async () => {
    const call = () => gw.call("eth", `/${KEYS.all}/`, { body: rpcBody("eth_blockNumber") });
    // both nodes answered once: their heads are known, 0x10
    for (let i = 0; i < 2; i++) expect((await call()).status).toBe(200);
    // another instance served 0x11 (a peer's rise, as Redis brings it)
    gw.gateway.upstreams.group("eth", "/")?.served.raiseFromPeer(0x11);
    expect((await call()).status).toBe(200);
    const rules = new Map(gw.gateway.upstreams.group("eth", "/")?.answers.entries());
    expect(rules.get("head_wait")).toBeUndefined();
  });
});
