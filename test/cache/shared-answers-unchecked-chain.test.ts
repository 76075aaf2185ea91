import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SharedAnswers } from "../../src/cache/shared-answers.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { GatewayConfig } from "../../src/config/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { needOwnServerBinaries, type OwnRedis, startOwnRedis } from "../support/own-servers.js";

// docs/cache.md, "Many instances": a label whose chain is not checked (probes off here, as registry
// `noChainId` does) may be served by another chain's nodes; its final answers were shared in Redis under
// the label alone, so another chain's eth_chainId came back from Redis for 24 hours: after a reload to
// other nodes, to a proxy restarted on them, and to every proxy of a fleet where one pointed at the wrong
// chain. Such a label now shares only with instances on the same nodes (shared-answers.ts `sharedScope`).
const own = needOwnServerBinaries("redis");

describe.skipIf(own.skip)("shared answers of a label whose chain is not checked", () => {
  let mainnet: LoopbackNode;
  let bsc: LoopbackNode;
  let redis: OwnRedis;
  const shared: SharedAnswers[] = [];
  const gateways: RunningGateway[] = [];
  /** A proxy on `nodes` for `eth`, probes off, sharing answers through the test's Redis. */
  const proxy = async (nodes: LoopbackNode[]) => {
    const answers = new SharedAnswers({ redis: redis.url, leaseMs: 100, fallbackShare: 1 });
    shared.push(answers);
    const gw = await startGateway({
      upstreams: { eth: nodes.map((node) => node.url) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 0 },
      cache: { ...DEFAULT_CACHE, enabled: true },
      sharedAnswers: answers,
    });
    gateways.push(gw);
    await eventually(() => answers.up, 5_000, "Redis connected");
    return { gw, answers };
  };
  const chainId = async (gw: RunningGateway, id: number) => {
    const answer = await gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_chainId", [], id) });
    return { result: (answer.json as { result: unknown }).result, cache: answer.headers["x-cache"] };
  };
  const asked = (node: LoopbackNode) => node.requests.filter((r) => r.body.includes("eth_chainId")).length;

  beforeAll(async () => {
    mainnet = await startLoopbackNode(jsonRpcResponder({ eth_chainId: "0x1", eth_blockNumber: "0x10" }));
    bsc = await startLoopbackNode(jsonRpcResponder({ eth_chainId: "0x38", eth_blockNumber: "0x20" }));
    redis = await startOwnRedis();
  });
  afterAll(async () => {
    await Promise.all(gateways.map((gw) => gw.close()));
    for (const answers of shared) answers.close();
    await redis?.close();
    await mainnet?.close();
    await bsc?.close();
  });

  it("a proxy pointed at another chain's node shares its answers with no proxy on other nodes", async () => {
    const wrong = await proxy([bsc]);
    expect((await chainId(wrong.gw, 1)).result).toBe("0x38");
    await eventually(() => wrong.answers.counts.stored >= 1, 5_000, "the wrong chain's id in Redis");

    // a fleet's rightly configured proxy, a proxy restarted on the right node, the wrong one reloaded to it
    const right = await proxy([mainnet]);
    expect(await chainId(right.gw, 2)).toEqual({ result: "0x1", cache: "miss" });
    wrong.gw.gateway.reload(
      { ...wrong.gw.config, upstreams: { eth: [mainnet.url] } } as GatewayConfig,
      wrong.gw.keys,
    );
    expect((await chainId(wrong.gw, 3)).result).toBe("0x1");
  });

  it("proxies on the same nodes still share", async () => {
    const before = asked(bsc);
    const again = await proxy([bsc]);
    expect(await chainId(again.gw, 4)).toEqual({ result: "0x38", cache: "hit" });
    expect(asked(bsc)).toBe(before);
  });
});
