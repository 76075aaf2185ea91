import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { everyNodeInRotation } from "../support/rotation.js";

// An answer about a block that turned final while the node was answering (docs/cache.md, "an answer
// fetched while the head moved is not kept at all"): the node read the block before a reorg replaced it,
// and the label learned the new finalized height before the answer came back. Judged final on arrival, the
// replaced block would be served for good. Real anvil (finalized 64 below its head) behind a recording node
// that holds that one answer back.

const FINALITY_DEPTH = 64;

describe("a read that a reorg and new finality overtake while the node answers (real anvil)", () => {
  let anvil: Anvil;
  let node: RecordingNode;
  let gw: RunningGateway;
  const finalized = () => gw.gateway.upstreams.group("eth", "/")?.finalized ?? -1;
  const blockAt = async (number: string) => {
    const answer = await gw.call("eth", `/${KEYS.all}`, {
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getBlockByNumber",
        params: [number, false],
      }),
    });
    return {
      hash: (answer.json as { result: { hash: string } }).result.hash,
      cache: answer.headers["x-cache"],
    };
  };

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 1 });
    await anvil.rpc("anvil_mine", ["0xc8"]);
    node = await startRecordingNode(anvil.url);
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, name: "node-0" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 60_000 },
    });
    await everyNodeInRotation(gw);
    await eventually(() => finalized() === 200 - FINALITY_DEPTH, 3_000, "the finalized height read");
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    await anvil?.stop();
  });

  it("is not kept: the next read asks the node and gets the block that replaced it", async () => {
    const block = "0x96"; // 150: above the finalized 136
    const isTheRead = (c: { method: string; params: unknown }) =>
      c.method === "eth_getBlockByNumber" && (c.params as unknown[])[0] === block;
    node.answerLateMs = (c) => (isTheRead(c) ? 1_500 : 0);
    const pending = blockAt(block);
    // the node has read block 150 of the old chain; then the last 61 blocks are replaced, 20 more mined
    await eventually(() => node.calls.some(isTheRead), 3_000, "the read reached the node");
    await anvil.rpc("anvil_reorg", [61, []]);
    await anvil.rpc("anvil_mine", ["0x14"]);
    await eventually(() => finalized() === 220 - FINALITY_DEPTH, 3_000, "the new finalized height read");
    const late = await pending;
    node.answerLateMs = undefined;
    const now = (await anvil.rpc<{ hash: string }>("eth_getBlockByNumber", [block, false])).hash;
    expect(late.hash).not.toBe(now);
    expect(await blockAt(block)).toEqual({ hash: now, cache: "miss" });
    // the block is final now, and its answer is kept for good
    expect(await blockAt(block)).toEqual({ hash: now, cache: "hit" });
  });

  // Each answered write of any caller moves the head's epoch (group.ts `wrote`), and so does each new block a
  // node reports: a block final long since stays final across them, however many.
  for (const [moves, block] of [
    [1, "0x11"],
    [70, "0x56"],
  ] as const)
    it(`a block final long since, read across ${moves} epoch move(s), is kept`, async () => {
      const group = gw.gateway.upstreams.group("eth", "/");
      const isTheRead = (c: { method: string; params: unknown }) =>
        c.method === "eth_getBlockByNumber" && (c.params as unknown[])[0] === block;
      node.answerLateMs = (c) => (isTheRead(c) ? 1_000 : 0);
      const pending = blockAt(block);
      await eventually(() => node.calls.some(isTheRead), 3_000, "the read reached the node");
      for (let i = 0; i < moves; i++) group?.served.moved();
      expect((await pending).cache).toBe("miss");
      node.answerLateMs = undefined;
      expect((await blockAt(block)).cache).toBe("hit");
    });
});

// A revert is the node's own answer, kept for good when its call is final: final as the node that
// answered holds it (docs/cache.md), as any answer is. Two anvils on one chain, the second ten blocks
// behind: its finalized block is ten lower than the label's.
describe("a revert from a node that does not hold its block final yet (real anvils)", () => {
  const REVERTS = "0x70997970c51812dc3a010c7d01b0e0aec37d6c8f";
  let anvils: Anvil[];
  let gw: RunningGateway;
  const finalizedBy = (i: number) => {
    const group = gw.gateway.upstreams.group("eth", "/");
    const node = group?.members[i];
    return node === undefined ? -1 : (group?.finality.finalizedBy(node) ?? -1);
  };

  beforeAll(async () => {
    const sameChainAs = { genesisTimestamp: 1_700_000_000 };
    anvils = await Promise.all([
      startAnvil({ chainId: 1, sameChainAs }),
      startAnvil({ chainId: 1, sameChainAs }),
    ]);
    for (const anvil of anvils) {
      await anvil.rpc("anvil_setCode", [REVERTS, "0x60006000fd"]); // PUSH1 0 PUSH1 0 REVERT
      await anvil.rpc("anvil_mine", ["0xbe", "0x1"]);
    }
    await anvils[0]?.rpc("anvil_mine", ["0xa", "0x1"]);
    gw = await startGateway({
      upstreams: { eth: anvils.map((anvil, i) => ({ url: anvil.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100, maxLagBlocks: 20, maxLagSeconds: 3_600 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 60_000 },
    });
    await everyNodeInRotation(gw);
    await eventually(
      () => finalizedBy(0) === 200 - FINALITY_DEPTH && finalizedBy(1) === 190 - FINALITY_DEPTH,
      3_000,
      "each node's finalized block read",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((anvils ?? []).map((anvil) => anvil.stop()));
  });

  it("is not kept: an error is kept only when final where it was answered", async () => {
    gw.gateway.cordon({ label: "eth", upstream: "n0", cordoned: true });
    const revert = async (block = "0x82") => {
      const answer = await gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_call", params: [{ to: REVERTS }, block] }),
      });
      expect(answer.json).toMatchObject({
        error: { message: expect.stringContaining("execution reverted") },
      });
      return answer.headers["x-cache"];
    };
    // block 130: final to the label (136) and to the first node, not to the second (126), which answers
    expect(await revert()).toBe("miss");
    expect(await revert()).toBe("miss");
    // at block 120, final to both, it is
    expect(await revert("0x78")).toBe("miss");
    expect(await revert("0x78")).toBe("hit");
    gw.gateway.cordon({ label: "eth", upstream: "n0", cordoned: false });
  });
});
