import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Anvil } from "../support/anvil.js";
import { startAnvilsBlockApart } from "../support/anvils-block-apart.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// A user's batch with an integer id past 2^53 (9007199254740993), reading the newest block by hash, got its
// answer back under another id (…992) whenever it landed on the node a block behind and the read was asked
// again of the other: the gateway parsed the batch's answers as numbers to put them back together. So was a
// filter made in a batch under such an id not known as that node's, and its polls went to any node. A
// JSON-RPC id is the caller's own token: anvil (a u64 id) and geth (the id's raw text) write it back
// exactly, and so must the gateway (src/jsonrpc/id-key.ts). Two real anvils, one a block behind.
const BIG = "9007199254740993"; // 2^53 + 1: a u64 anvil reads and echoes, a double cannot hold

describe("a batch with integer ids past 2^53, on two anvils one a block behind", () => {
  let a: Anvil;
  let b: Anvil;
  let behind: RecordingNode;
  let gw: RunningGateway;
  let hash = "";
  let restoreHosts: () => void = () => {};

  beforeAll(async () => {
    restoreHosts = resolveTestHosts();
    ({ a, b, hash } = await startAnvilsBlockApart());
    // b, the node a block behind, seen through a recorder: the test asks until a batch has landed on it
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

  it("a read by hash asked again of the other node keeps the caller's id, as anvil itself writes it", async () => {
    const alone = `[{"jsonrpc":"2.0","id":${BIG},"method":"eth_getBlockByHash","params":["${hash}",false]}]`;
    const direct = await fetch(a.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: alone,
    });
    expect(await direct.text()).toContain(`"id":${BIG}`);
    const ids: string[] = [];
    const atB = () => behind.calls.filter((c) => c.method === "eth_getBlockByHash").length;
    for (let i = 0; i < 40 && (atB() === 0 || i < 6); i++) {
      const answer = await gw.call("eth", `/${KEYS.all}`, {
        body: `[{"jsonrpc":"2.0","id":${BIG},"method":"eth_getBlockByHash","params":["${hash}",false]},{"jsonrpc":"2.0","id":2,"method":"eth_chainId","params":[]}]`,
      });
      // the block was found (on a) every time
      expect(answer.text).toContain(hash);
      ids.push(/"id":(\d+),"result":\{/.exec(answer.text)?.[1] ?? answer.text.slice(0, 200));
    }
    // b answered null at least once, and the read was asked again of a
    expect(atB()).toBeGreaterThan(0);
    expect(ids).toEqual(Array(ids.length).fill(BIG));
  });

  it("a filter made in a batch under such an id is polled on the node that made it, every time", async () => {
    const made = await gw.call("eth", `/${KEYS.all}`, {
      body: `[{"jsonrpc":"2.0","id":${BIG},"method":"eth_newBlockFilter","params":[]},{"jsonrpc":"2.0","id":2,"method":"eth_chainId","params":[]}]`,
    });
    const filter = new RegExp(`"id":${BIG},"result":"(0x[0-9a-f]+)"`).exec(made.text)?.[1];
    expect(filter, made.text).toBeDefined();
    for (let i = 0; i < 6; i++) {
      const polled = await gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getFilterChanges", params: [filter] }),
      });
      expect((polled.json as { error?: unknown }).error, `poll ${i}`).toBeUndefined();
    }
  });
});
