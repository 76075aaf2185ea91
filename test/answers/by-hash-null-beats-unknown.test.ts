import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Anvil } from "../support/anvil.js";
import { startAnvilsBlockApart } from "../support/anvils-block-apart.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// eth_getUncleByBlockHashAndIndex(hash, "0x0") of the newest block, through two real anvils a block apart:
// the node that has the block answers null (it has no uncle), the one behind -32001 "Resource not found"
// (anvil's error for a block hash it does not know). Whichever the read landed on first, the other was
// asked again; when the first was the node with the block, its null sent the read on to the node behind,
// whose "Resource not found" the caller got, for a block it had just been shown. Both answers say "not
// here"; the null of a node that did not refuse the block is the answer.

describe("a read by hash answered null by one node and 'unknown block' by the other answers null", () => {
  let a: Anvil;
  let b: Anvil;
  let gw: RunningGateway;
  let hash = "";
  let restoreHosts: () => void = () => {};

  beforeAll(async () => {
    restoreHosts = resolveTestHosts();
    ({ a, b, hash } = await startAnvilsBlockApart());
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, enabled: false },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    restoreHosts();
  });

  it("alone and in a batch", async () => {
    expect(await a.rpc("eth_getUncleByBlockHashAndIndex", [hash, "0x0"])).toBeNull();
    await expect(b.rpc("eth_getUncleByBlockHashAndIndex", [hash, "0x0"])).rejects.toThrow(
      "Resource not found",
    );
    const alone: unknown[] = [];
    const batched: unknown[] = [];
    for (let i = 0; i < 6; i++) {
      const one = await gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "eth_getUncleByBlockHashAndIndex",
          params: [hash, "0x0"],
        }),
      });
      alone.push(one.json);
      const batch = await gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify([
          { jsonrpc: "2.0", id: 1, method: "eth_getUncleByBlockHashAndIndex", params: [hash, "0x0"] },
          { jsonrpc: "2.0", id: 2, method: "eth_chainId", params: [] },
        ]),
      });
      batched.push((batch.json as { id: number }[]).find((answer) => answer.id === 1));
    }
    expect(alone).toEqual(Array(6).fill({ jsonrpc: "2.0", id: 1, result: null }));
    expect(batched).toEqual(Array(6).fill({ jsonrpc: "2.0", id: 1, result: null }));
  });
});
