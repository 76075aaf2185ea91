import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PLANS, PLAN_FIELDS } from "../../src/config/defaults.js";
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

// docs/plans.md: "a read a full node refuses and the archive tier then answers ... the quota holds it at the
// archive's price from the start ...: reads sent at once can never take a quota past its limit by the
// surcharge". Over a WebSocket the hold was the full node's price, and the archive nodes' answers were
// settled past the quota: five old reads sent at once on one connection spent twice a quota of 100.
// Each message's hold is now what HTTP's is (plan-upstream.ts socketQuotaUnits).

const plan = (fields: Partial<PlanSpec>): PlanSpec => ({
  ...PLAN_FIELDS,
  computeUnitRate: { perSecond: 1_000_000, burst: 1_000_000 },
  ...fields,
});
const RATE = { perSecond: 10_000, burst: 10_000 };
const HTTP_KEY = "FNhttpArchive00000000000000000";
const WS_KEY = "FNsocketArchive000000000000000";
const address = `0x${"ab".repeat(20)}`;

describe("archive surcharge against a daily quota of 100 CU (eth_getBalance: 20, archive 2x)", () => {
  let full: LoopbackWsNode;
  let fullHttp: LoopbackNode;
  let archive: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void = () => {};

  beforeAll(async () => {
    restore = resolveTestHosts();
    const missing = { jsonrpc: "2.0", error: { code: -32000, message: "missing trie node 1f2e3d (path )" } };
    full = await startLoopbackWsNode(
      evmNode({
        eth_getBalance: () => {
          throw new WsRpcError(-32000, "missing trie node 1f2e3d (path )");
        },
      }),
    );
    fullHttp = await startLoopbackNode(async (request) => {
      const call = JSON.parse(request.body) as { id: unknown; method: string };
      if (call.method === "eth_getBalance") return { body: { ...missing, id: call.id } };
      return { body: { jsonrpc: "2.0", id: call.id, result: "0x10" } };
    });
    archive = await startLoopbackNode(async (request) => {
      const call = JSON.parse(request.body) as { id: unknown };
      return { body: { jsonrpc: "2.0", id: call.id, result: "0x99" } };
    });
    gw = await startGateway({
      upstreams: { eth: [{ url: fullHttp.url, ws: full.wsUrl }], "eth-archive": [archive.url] },
      plans: { ...DEFAULT_PLANS, small: plan({ dailyQuota: 100 }) },
      keys: [
        ...TEST_KEYS,
        { key: HTTP_KEY, networks: "*", plan: "small", rate: RATE },
        { key: WS_KEY, networks: "*", plan: "small", rate: RATE },
      ],
    });
  });
  afterAll(async () => {
    restore();
    await gw?.close();
    await Promise.all([full?.close(), fullHttp?.close(), archive?.close()]);
  });

  it("over HTTP: the third old read (80 + 40 > 100) is refused with 402", async () => {
    const statuses: number[] = [];
    let spent = 0;
    for (let i = 0; i < 3; i++) {
      const answer = await gw.call("eth", `/${HTTP_KEY}`, {
        body: rpcBody("eth_getBalance", [address, "0x10"]),
      });
      statuses.push(answer.status);
      spent += Number(answer.headers["x-compute-units"] ?? 0);
    }
    expect(statuses).toEqual([200, 200, 402]);
    expect(spent).toBe(80);
  });

  it("over a WebSocket: as over HTTP, reads sent at once spend at most the quota", async () => {
    const units = () => gw.metric("gateway_compute_units_total", { label: "eth" });
    const before = await units();
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${WS_KEY}`);
    // five reads sent at once: each held at the archive's 40, answered by the archive nodes at 40
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        client.call("eth_getBalance", [address, "0x10"]).catch((error: unknown) => error),
      ),
    );
    client.close();
    await eventually(async () => (await units()) - before >= 80, 2_000, "counted");
    const served = answers.filter((a) => (a as { result?: string }).result === "0x99").length;
    expect({ served, spent: (await units()) - before }).toEqual({ served: 2, spent: 80 });
  });
});
