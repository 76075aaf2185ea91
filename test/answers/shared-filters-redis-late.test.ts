import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH, DEFAULT_SHARED_LIMITS } from "../../src/config/defaults.js";
import { SharedHandles } from "../../src/upstream/shared-handles.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { needOwnServerBinaries, type OwnRedis, startOwnRedis } from "../support/own-servers.js";
import { everyNodeInRotation } from "../support/rotation.js";

// A filter made through one instance while the Redis of `sharedLimits` was away (down at the start, or a
// restart) is that instance's alone meanwhile (docs/upstreams.md, "State a node made: filters"). Once Redis
// answers again, the instance tells it of the filters it holds, so that a dApp's polls through another
// instance reach the filter's node: before, such a filter was never shared, and half the polls through the
// other instance went to the node that did not have it.
const binaries = needOwnServerBinaries("redis");

describe.skipIf(binaries.skip)("a filter made while Redis was away, polled through another instance", () => {
  let redis: OwnRedis;
  let nodes: Anvil[];
  let handles: SharedHandles[];
  let a: RunningGateway;
  let b: RunningGateway;
  const rpc = async (gw: RunningGateway, method: string, params: unknown[]) =>
    (
      await gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      })
    ).json as { result?: unknown; error?: unknown };

  beforeAll(async () => {
    redis = await startOwnRedis();
    await redis.stop();
    const chain = { sameChainAs: { genesisTimestamp: 1_700_000_000 }, chainId: 1 };
    nodes = await Promise.all([startAnvil(chain), startAnvil(chain)]);
    handles = [0, 1].map(() => new SharedHandles({ ...DEFAULT_SHARED_LIMITS, redis: redis.url }));
    const start = (shared: SharedHandles) =>
      startGateway({
        upstreams: { eth: nodes.map((node, i) => ({ url: node.url, name: `anvil-${i}` })) },
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
        handles: shared,
      });
    [a, b] = (await Promise.all(handles.map(start))) as [RunningGateway, RunningGateway];
    await Promise.all([everyNodeInRotation(a), everyNodeInRotation(b)]);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    for (const shared of handles ?? []) shared.close();
    await Promise.all((nodes ?? []).map((node) => node.stop()));
    await redis?.close();
  });

  it("is told to Redis once it is back, and each poll through the other instance reaches its node", async () => {
    const made = await rpc(a, "eth_newBlockFilter", []);
    expect(typeof made.result).toBe("string");
    await redis.start();
    const client = new Redis(redis.url);
    try {
      await eventually(
        async () => (await client.keys(`gateway:handle:eth:*${String(made.result).slice(2)}`)).length > 0,
        // ioredis tries again with a backoff of up to 5 s
        10_000,
        "the filter told to Redis",
      );
    } finally {
      client.disconnect();
    }
    await Promise.all(handles.map((shared) => shared.ready(10_000)));
    for (let i = 0; i < 8; i++)
      expect((await rpc(b, "eth_getFilterChanges", [made.result])).error, `poll ${i}`).toBeUndefined();
  });
});
