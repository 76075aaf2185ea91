import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { answeredSince, type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// docs/cache.md, "The head, and reorgs": what was read at the head is kept while the label's head stays
// (issue 31: hot reads answered from the cache, the nodes spared), and a block replaced under a node ends
// it. With two nodes on sibling blocks of one height (both valid, the network not yet settled on one:
// two anvils on one genesis, block 4 mined at another second on each), the head's epoch moved at every
// probe of either node, the prober's `eth_getBlockByNumber("latest")` hash differing from the other
// node's, seen last: every head read kept between two probes reached the nodes again.

const GENESIS = 1_700_000_000;
const LATEST = ["latest", false];

async function ask(gw: RunningGateway, method: string, params: unknown[] = []) {
  const answer = await gw.call("eth", `/${KEYS.all}`, { body: rpcBody(method, params) });
  return { result: (answer.json as { result?: unknown }).result, cache: answer.headers["x-cache"] };
}

describe("two nodes on sibling blocks of one height", () => {
  let nodes: Anvil[];
  let recorders: RecordingNode[];
  let gw: RunningGateway;
  let restore: () => void;
  const served = () => gw.gateway.upstreams.group("eth", "/")?.served;

  beforeAll(async () => {
    restore = resolveTestHosts();
    nodes = await Promise.all(
      [0, 1].map(() => startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 })),
    );
    for (let block = 1; block <= 3; block++)
      await Promise.all(nodes.map((n) => n.rpc("evm_mine", [GENESIS + 12 * block])));
    // block 4 on one parent, made at another second on each node: two blocks of one height
    await Promise.all(nodes.map((n, i) => n.rpc("evm_mine", [GENESIS + 48 + i])));
    recorders = await Promise.all(nodes.map((n) => startRecordingNode(n.url)));
    gw = await startGateway({
      upstreams: { eth: recorders.map((r, i) => ({ url: r.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 30_000 },
    });
    await eventually(
      () => recorders.every((r) => answeredSince(r, 0, LATEST)),
      5_000,
      "each node's head block probed",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((recorders ?? []).map((r) => r.close()));
    await Promise.all((nodes ?? []).map((n) => n.stop()));
    restore?.();
  });

  it("the head's epoch stays while neither node's block changes, and head reads stay kept", async () => {
    const [a, b] = await Promise.all(
      nodes.map((n) => n.rpc<{ hash: string }>("eth_getBlockByNumber", ["0x4", false])),
    );
    expect(a?.hash).not.toBe(b?.hash);
    expect(served()?.height).toBe(4);
    const epoch = served()?.epoch;
    expect((await ask(gw, "eth_blockNumber")).result).toBe("0x4");
    expect((await ask(gw, "eth_blockNumber")).cache).toBe("hit");
    // three more head block reads of each node
    for (let round = 0; round < 3; round++) {
      const marks = recorders.map((r) => r.calls.length);
      await eventually(
        () => recorders.every((r, i) => answeredSince(r, marks[i] as number, LATEST)),
        5_000,
        "each node's head block probed again",
      );
    }
    expect(served()?.epoch).toBe(epoch);
    expect(await ask(gw, "eth_blockNumber")).toEqual({ result: "0x4", cache: "hit" });
  });

  it("a block replaced under a node at that height still ends what was read at the head", async () => {
    const epoch = served()?.epoch as number;
    const before = await nodes[1]?.rpc<{ hash: string }>("eth_getBlockByNumber", ["0x4", false]);
    // node 1's block 4 is replaced by another of its height (anvil_reorg keeps the head where it was)
    await nodes[1]?.rpc("anvil_reorg", [1, []]);
    const after = await nodes[1]?.rpc<{ hash: string; number: string }>("eth_getBlockByNumber", [
      "latest",
      false,
    ]);
    expect(after?.number).toBe("0x4");
    expect(after?.hash).not.toBe(before?.hash);
    await eventually(() => (served()?.epoch as number) > epoch, 5_000, "the epoch moved");
    expect(served()?.height).toBe(4);
  });
});
