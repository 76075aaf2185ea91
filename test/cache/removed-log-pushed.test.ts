import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import {
  type ActiveSubscription,
  evmNode,
  type LoopbackWsNode,
  startLoopbackWsNode,
  waitUntil,
} from "../support/loopback-ws-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// docs/cache.md, "The head, and reorgs" (issue 31: "when the prober or a subscription sees a block replaced
// below the old head, the entries of that range die"). A dApp subscribed to a contract's logs is told of a
// reorganisation by the node itself: geth pushes each log of the blocks taken back with `removed: true`
// (core/types/log.go `Removed`, "true if this log was reverted due to a chain reorganisation"; the filter
// system's RemovedLogsEvent, eth/filters/filter_system.go), then the logs of the blocks that replaced them.
// A dApp reads the contract's state again on such a push: with the head at the same height (a one-block
// reorg), it read the state of the replaced block back from the cache, kept at the head's epoch, until the
// prober's next read of the head block or headMaxAgeMs. Here the prober reads once a minute and the head's
// answers may live as long, so only the push can end them.

const CONTRACT = "0x5fbdb2315678afecb367f032d93f642f64180aa3";
const OLD_HASH = `0x${"a1".repeat(32)}`;
const NEW_HASH = `0x${"b2".repeat(32)}`;
const PARENT = `0x${"0f".repeat(32)}`;

describe("a block taken back by a reorganisation, seen by a logs subscription's removed log", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  let head = OLD_HASH;
  let storage = `0x${"0".repeat(63)}1`;
  const block = (number: string, hash: string) => ({ number, hash, parentHash: PARENT, timestamp: "0x1" });

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(
      evmNode({
        eth_blockNumber: "0x10",
        eth_getBlockByNumber: (params: unknown) =>
          (params as unknown[])[0] === "finalized"
            ? block("0x8", `0x${"08".repeat(32)}`)
            : block("0x10", head),
        eth_getStorageAt: () => storage,
      }),
    );
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, ws: node.wsUrl, name: "n" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 60_000 },
    });
    await everyNodeInRotation(gw, "eth");
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("the state read after the removed log is the new head block's, not the one kept at the head", async () => {
    const read = async () => {
      const answer = await gw.call("eth", `/${KEYS.all}`, {
        body: rpcBody("eth_getStorageAt", [CONTRACT, "0x0", "latest"]),
      });
      return { result: (answer.json as { result: string }).result, cache: answer.headers["x-cache"] };
    };
    const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      expect((await socket.call("eth_subscribe", ["logs", { address: CONTRACT }])).error).toBeUndefined();
      let logs: ActiveSubscription | undefined;
      await waitUntil(() => {
        logs = node.connections.flatMap((c) => [...c.subscriptions.values()])[0];
        return logs !== undefined;
      });
      const before = await read();
      expect(await read()).toEqual({ result: before.result, cache: "hit" });
      // the node replaces block 0x10 by another of its height, whose state differs, and pushes the log
      // of the replaced block taken back, as geth does
      head = NEW_HASH;
      storage = `0x${"0".repeat(63)}2`;
      const from = socket.received.length;
      logs?.notify({
        address: CONTRACT,
        topics: [],
        data: "0x",
        blockNumber: "0x10",
        transactionHash: `0x${"cc".repeat(32)}`,
        transactionIndex: "0x0",
        blockHash: OLD_HASH,
        logIndex: "0x0",
        removed: true,
      });
      await socket.waitFor((text) => text.includes('"removed":true'), 5_000, from);
      expect((await read()).result).toBe(storage);
    } finally {
      socket.close();
    }
  });
});
