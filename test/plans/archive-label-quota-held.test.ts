import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlanSpec } from "../../src/config/types.js";
import { eventually } from "../support/eventually.js";
import { type RunningGateway, rpcBody, startGateway, TEST_PLANS } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// docs/compute-units.md: "a call an archive node answers costs the interface's archive factor times as
// much"; docs/plans.md: "The rate and the quota hold that price before the call goes: ... a read the
// archive tier answers at once at its factor ... reads sent at once can never take a quota past its limit
// by the surcharge". Every call on an archive label (eth-archive) is an archive node's, at 2x; the quota
// held each at a full node's price, so calls sent at once spent past the quota.

const KEY = "FNarchiveLabelHold000000000000000";
const shared = TEST_PLANS.shared as PlanSpec;

describe("calls on an archive label against a daily quota of 100 CU (eth_blockNumber: 10, archive 2x)", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });

  beforeAll(async () => {
    node = await startLoopbackNode(async (request) => {
      const { id } = JSON.parse(request.body) as { id: number };
      await released;
      return { body: { jsonrpc: "2.0", id, result: "0x10" } };
    });
    gw = await startGateway({
      upstreams: { "eth-archive": [node.url] },
      plans: { ...TEST_PLANS, small: { ...shared, dailyQuota: 100, monthlyQuota: 0, archive: true } },
      keys: [{ key: KEY, networks: "*", plan: "small", rate: { perSecond: 1e6, burst: 1e6 } }],
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("hold each at the archive's price: six sent at once serve 100 CU, not 120", async () => {
    let answered = 0;
    const calls = Array.from({ length: 6 }, (_, i) =>
      gw.call("eth-archive", `/${KEY}`, { body: rpcBody("eth_blockNumber", [], i + 1) }).then((r) => {
        answered++;
        return r;
      }),
    );
    await eventually(() => node.requests.length + answered === 6, 3_000, "every call at the node or refused");
    release();
    const results = await Promise.all(calls);
    const served = results.filter((r) => r.status === 200);
    expect(served.map((r) => r.headers["x-compute-units"])).toEqual(served.map(() => "20"));
    const spent = served.length * 20;
    expect(spent).toBeLessThanOrEqual(100);
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 402]);
  });
});
