import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH, DEFAULT_PLANS, PLAN_FIELDS } from "../../src/config/defaults.js";
import type { PlanSpec } from "../../src/config/types.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, type RunningGateway, rpcBody, startGateway, TEST_KEYS } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import {
  evmNode,
  type LoopbackWsNode,
  startLoopbackWsNode,
  WsRpcError,
} from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// docs/plans.md: a read a full node refuses and the archive tier then answers is held against the quota "at
// the archive's price from the start ...: reads sent at once can never take a quota past its limit by the
// surcharge". A read of old history (registry `archive.history`: eth_getLogs of a range older than a full
// node keeps) goes so once a full node past EIP-4444 answers "pruned history unavailable", yet was held at a
// full node's price: two sent at once on a 200 CU day were both served, at 150 each.

const plan = (fields: Partial<PlanSpec>): PlanSpec => ({
  ...PLAN_FIELDS,
  computeUnitRate: { perSecond: 1_000_000, burst: 1_000_000 },
  ...fields,
});
const RATE = { perSecond: 10_000, burst: 10_000 };
const HTTP_KEY = "FNhttpHistoryQuota000000000000";
const WS_KEY = "FNsocketHistoryQuota0000000000";
const HEAD = "0x12c";
// blocks 1-100, below the head (300) by more than a full node keeps (fullHistory 128)
const OLD_RANGE = [{ fromBlock: "0x1", toBlock: "0x64" }];
const PRUNED = { code: 4444, message: "pruned history unavailable" };
/** What the HTTP nodes answer a health probe with. */
const probed = (method: string): unknown =>
  method === "eth_chainId" ? "0x1" : method === "net_version" ? "1" : HEAD;

describe("old eth_getLogs against a daily quota of 200 CU (75, archive 2×: 150)", () => {
  let full: LoopbackWsNode;
  let fullHttp: LoopbackNode;
  let archive: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void = () => {};

  beforeAll(async () => {
    restore = resolveTestHosts();
    full = await startLoopbackWsNode(
      evmNode({
        eth_blockNumber: HEAD,
        eth_getLogs: () => {
          throw new WsRpcError(PRUNED.code, PRUNED.message);
        },
      }),
    );
    fullHttp = await startLoopbackNode(async (request) => {
      const call = JSON.parse(request.body) as { id: unknown; method: string };
      if (call.method !== "eth_getLogs")
        return { body: { jsonrpc: "2.0", id: call.id, result: probed(call.method) } };
      // both reads are in flight together
      await new Promise((resolve) => setTimeout(resolve, 200));
      return { body: { jsonrpc: "2.0", id: call.id, error: PRUNED } };
    });
    archive = await startLoopbackNode(async (request) => {
      const call = JSON.parse(request.body) as { id: unknown; method: string };
      return {
        body: {
          jsonrpc: "2.0",
          id: call.id,
          result: call.method === "eth_getLogs" ? [] : probed(call.method),
        },
      };
    });
    gw = await startGateway({
      upstreams: { eth: [{ url: fullHttp.url, ws: full.wsUrl }], "eth-archive": [archive.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      plans: { ...DEFAULT_PLANS, small: plan({ dailyQuota: 200, archive: true }) },
      keys: [
        ...TEST_KEYS,
        { key: HTTP_KEY, networks: "*", plan: "small", rate: RATE },
        { key: WS_KEY, networks: "*", plan: "small", rate: RATE },
      ],
    });
    await eventually(
      async () => (await gw.metric("gateway_upstream_head", { label: "eth" })) === 300,
      5000,
      "head",
    );
  });
  afterAll(async () => {
    restore();
    await gw?.close();
    await Promise.all([full?.close(), fullHttp?.close(), archive?.close()]);
  });

  it("over HTTP: of two sent at once, one is served at 150 and the other refused with 402", async () => {
    const answers = await Promise.all(
      [1, 2].map(() => gw.call("eth", `/${HTTP_KEY}`, { body: rpcBody("eth_getLogs", OLD_RANGE) })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 402]);
    const served = answers.find((a) => a.status === 200);
    expect(served?.headers["x-upstream-tier"]).toBe("archive");
    expect(answers.map((a) => Number(a.headers["x-compute-units"] ?? 0)).sort()).toEqual([0, 150]);
  });

  it("over a WebSocket: reads sent at once spend at most the quota", async () => {
    // wherever a socket's archive answers are counted
    const units = async () =>
      (await gw.metric("gateway_compute_units_total", { label: "eth" })) +
      (await gw.metric("gateway_compute_units_total", { label: "eth-archive" }));
    const before = await units();
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${WS_KEY}`);
    const answers = await Promise.all(
      Array.from({ length: 4 }, () => client.call("eth_getLogs", OLD_RANGE).catch((error: unknown) => error)),
    );
    client.close();
    // a socket's call is counted as its answer goes out: every answer is in, and counted
    await eventually(async () => (await units()) - before >= 150, 2_000, "counted");
    const served = answers.filter((a) => Array.isArray((a as { result?: unknown }).result)).length;
    expect({ served, spent: (await units()) - before }).toEqual({ served: 1, spent: 150 });
  });
});
