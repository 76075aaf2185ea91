import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// docs/cache.md, "The head, and reorgs": the first sight of a new height's block (the prober's
// `eth_getBlockByNumber("latest")`, registry `reads.cache.headBlock`) moves the head's epoch, so a block
// replaced after the head rose and before its hash was read is never served from what was kept. When a
// caller's answer raised the head, that sight waited for the node's next probe (2 s by default): every head
// read kept in between (each caller's balance or eth_call at latest) was dropped at that probe and
// reached the node again, twice in the block. The head block is now read as soon as an answer raises the
// head: the move comes within a round trip, and what is kept after it stays.

const BALANCE = [`0x${"00".repeat(19)}01`, "latest"];

describe("a head raised by a caller's answer", () => {
  let node: Anvil;
  let recorder: RecordingNode;
  let gw: RunningGateway;
  let restore: () => void;
  const served = () => gw.gateway.upstreams.group("eth", "/")?.served;
  const ask = async (method: string, params: unknown[] = []) => {
    const answer = await gw.call("eth", `/${KEYS.all}`, { body: rpcBody(method, params) });
    return { result: (answer.json as { result?: unknown }).result, cache: answer.headers["x-cache"] };
  };

  beforeAll(async () => {
    restore = resolveTestHosts();
    // the chain the eth label is (its prober checks eth_chainId)
    node = await startAnvil({ chainId: 1 });
    recorder = await startRecordingNode(node.url);
    gw = await startGateway({
      upstreams: { eth: [{ url: recorder.url, name: "n0" }] },
      // the prober's own rounds far apart: a head block read in this test is the one the rise asked for
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000, recoverAfter: 1 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 30_000 },
    });
    const headBlockRead = () =>
      recorder.calls.some((call) => JSON.stringify(call.params) === JSON.stringify(["latest", false]));
    await eventually(() => headBlockRead() && (served()?.height ?? -1) >= 0, 5_000, "the head block probed");
  });
  afterAll(async () => {
    await gw?.close();
    await recorder?.close();
    await node?.stop();
    restore?.();
  });

  it("has its block read at once, and what is kept at the head after that stays", async () => {
    const head = served()?.height as number;
    await node.rpc("evm_mine", []);
    expect((await ask("eth_blockNumber")).result).toBe(`0x${(head + 1).toString(16)}`);
    // the answer raised the head, which moved the epoch; the sight of the new block moves it once more
    const raised = served()?.epoch as number;
    await eventually(
      () => (served()?.epoch as number) > raised,
      2_000,
      "the new head's block seen after the answer that showed it",
    );
    const epoch = served()?.epoch;
    const seen: unknown[] = [];
    for (let i = 0; i < 3; i++) seen.push((await ask("eth_getBalance", BALANCE)).cache);
    for (let i = 0; i < 3; i++) seen.push((await ask("eth_blockNumber")).cache);
    // each once from the node in this epoch, then kept
    expect(seen).toEqual(["miss", "hit", "hit", "miss", "hit", "hit"]);
    expect(served()?.epoch).toBe(epoch);
  });
});
