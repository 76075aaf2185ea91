import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Anvil } from "../support/anvil.js";
import { startAnvilsBlockApart } from "../support/anvils-block-apart.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// A user's batch read the newest block by hash beside a call the gateway refuses on its own (admin_peers, a
// method the network does not serve): whenever it landed on the node a block behind, the block came back
// null, where the same batch without the refused call found it every time. A read by hash that a node
// answers null, for a block another node of the label has, is asked of that node, in a batch too
// (docs/upstreams.md); the refusal is that call's alone, and the batch's other calls are served as they
// would be without it. Two real anvils, one a block behind.

describe("a partial batch (one call refused) that reads a block by hash only one of two anvils has", () => {
  let a: Anvil;
  let b: Anvil;
  let behind: RecordingNode;
  let gw: RunningGateway;
  let hash = "";
  let restoreHosts: () => void = () => {};

  beforeAll(async () => {
    restoreHosts = resolveTestHosts();
    ({ a, b, hash } = await startAnvilsBlockApart());
    // b, a block behind, seen through a recorder: the test asks until a batch has landed on it
    behind = await startRecordingNode(b.url);
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, name: "a" },
          { url: behind.url, name: "b" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, enabled: false },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await behind?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    restoreHosts();
  });

  const byHash = () => ({ jsonrpc: "2.0", id: 1, method: "eth_getBlockByHash", params: [hash, false] });
  const atB = () => behind.calls.filter((c) => c.method === "eth_getBlockByHash").length;

  async function blocksFound(
    batch: unknown[],
  ): Promise<{ found: boolean[]; landedOnB: number; answers: { id: unknown }[][] }> {
    const from = atB();
    const found: boolean[] = [];
    const answers: { id: unknown }[][] = [];
    for (let i = 0; i < 40 && (atB() === from || i < 6); i++) {
      const answer = await gw.call("eth", `/${KEYS.all}`, { body: JSON.stringify(batch) });
      const all = answer.json as { id: unknown; result?: { hash?: string } }[];
      answers.push(all);
      found.push(all.find((x) => x.id === 1)?.result?.hash === hash);
    }
    return { found, landedOnB: atB() - from, answers };
  }

  it("without a refused call: found every time (the read asked again of a)", async () => {
    const { found, landedOnB } = await blocksFound([byHash()]);
    expect(landedOnB).toBeGreaterThan(0);
    expect(found.every(Boolean)).toBe(true);
  });

  it("with a refused call beside it: found every time too", async () => {
    const { found, landedOnB, answers } = await blocksFound([
      byHash(),
      { jsonrpc: "2.0", id: 2, method: "admin_peers", params: [] },
    ]);
    expect(landedOnB).toBeGreaterThan(0);
    expect(found).toEqual(found.map(() => true));
    // and the refused call has its own error object every time, after the node's answers
    for (const all of answers) expect(all[1]).toMatchObject({ id: 2, error: { code: expect.any(Number) } });
  });
});
