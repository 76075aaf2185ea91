import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// docs/cache.md, "The head, and reorgs" (issue 31: "when the prober or a subscription sees a block replaced
// below the old head, the entries of that range die"). A node that replaces its head block by another of
// the same height pushes the new block's header to its newHeads subscribers at once: anvil_reorg(1) does,
// as geth does on a one-block reorg (the new head, its number the old one's, another hash, the same parent).
// A dApp that reads the head block on each push read the replaced block back from the cache, kept at the
// head's epoch, until the prober's next read of the head block or headMaxAgeMs: the push said only a height
// the label had seen. Here the prober reads the head block once a minute and the head's answers may live
// as long, so only the push can end them.

type Block = { readonly number: string; readonly hash: string; readonly parentHash: string };

describe("a head block replaced at its height, seen by a newHeads push", () => {
  let node: Anvil;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startAnvil({ chainId: 1 });
    await node.rpc("anvil_mine", ["0x5"]);
    gw = await startGateway({
      upstreams: { eth: [node.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 60_000 },
    });
    await everyNodeInRotation(gw, "eth");
  });
  afterAll(async () => {
    await gw?.close();
    await node?.stop();
    restore?.();
  });

  it("the head block read after the push is the new one, not the replaced one kept at the head", async () => {
    const latest = async () => {
      const answer = await gw.call("eth", `/${KEYS.all}`, {
        body: rpcBody("eth_getBlockByNumber", ["latest", false]),
      });
      return { block: (answer.json as { result: Block }).result, cache: answer.headers["x-cache"] };
    };
    const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      const subscribed = await socket.call("eth_subscribe", ["newHeads"]);
      expect(subscribed.error).toBeUndefined();
      const old = (await latest()).block;
      expect(await latest()).toEqual({ block: old, cache: "hit" });
      // the node replaces its head block: same height, same parent, another hash, and pushes its header
      const from = socket.received.length;
      await node.rpc("anvil_reorg", [1, []]);
      const pushed = JSON.parse(
        await socket.waitFor((text) => text.includes('"eth_subscription"'), 5_000, from),
      ) as { params: { result: Block } };
      const replacement = pushed.params.result;
      expect(replacement.number).toBe(old.number);
      expect(replacement.parentHash).toBe(old.parentHash);
      expect(replacement.hash).not.toBe(old.hash);
      // the dApp reads the head block it was told of, over HTTP and on its socket
      const read = await latest();
      expect(read.block.hash).toBe(replacement.hash);
      expect(read.cache).not.toBe("hit");
      const overSocket = await socket.call("eth_getBlockByNumber", ["latest", false]);
      expect((overSocket.result as Block).hash).toBe(replacement.hash);
    } finally {
      socket.close();
    }
  });
});
