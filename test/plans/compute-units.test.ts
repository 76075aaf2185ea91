import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE } from "../../src/config/defaults.js";
import type { PlanSpec } from "../../src/config/types.js";
import type { UsageRecorder } from "../../src/keys/usage.js";
import type { Endpoint, Mount } from "../../src/registry/types.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway, TEST_PLANS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { rawRequest } from "../support/raw-http.js";

// Compute units (docs/compute-units.md): each call's cost from the registry, counted per label for what the
// gateway served, and nothing for what it refused.

const eth = endpointsByLabel.get("eth") as Endpoint;
const xtz = endpointsByLabel.get("xtz") as Endpoint;
const units = (endpoint: Endpoint) => (endpoint.mounts[0] as Mount).policy.computeUnits;

describe("compute units from the registry", () => {
  it("prices methods, patterns, writes and routes as the registry says, and the rest at the default", () => {
    const evm = units(eth);
    expect(evm.default).toBe(20);
    expect(evm.methods.get("eth_getLogs")).toBe(75);
    expect(evm.methods.get("eth_blockNumber")).toBe(10);
    // a `debug_*` pattern reaches every debug method the interface serves
    expect(evm.methods.get("debug_traceTransaction")).toBe(300);
    // and a method named exactly costs its own price, though the YAML lists `"trace_*": 100` before it
    expect(evm.methods.get("trace_block")).toBe(100);
    expect(evm.methods.get("trace_replayTransaction")).toBe(3000);
    expect(evm.methods.get("trace_replayBlockTransactions")).toBe(3000);
    // a write is priced as the interface's writes
    expect(evm.methods.get("eth_sendRawTransaction")).toBe(250);
    expect(evm.methods.has("eth_getBalance")).toBe(false);
    expect(evm.archive).toBe(2);
    const rest = units(xtz);
    expect(rest.routes.get("GET /chains/{}/blocks/{}")).toBe(40);
    expect(rest.routes.get("POST /injection/operation")).toBe(250);
  });
});

describe("compute units counted by the gateway", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    node = await startLoopbackNode(
      jsonRpcResponder({ eth_blockNumber: "0x10", eth_getLogs: [], eth_call: "0x", eth_getBalance: "0x1" }),
    );
    gw = await startGateway({
      upstreams: { eth: [node.url], "eth-archive": [node.url] },
      blockRanges: { eth: { eth_getLogs: { splitAbove: 500 } } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("counts each served call's cost per label, a batch as the sum of its calls, and nothing for a refusal", async () => {
    const before = await gw.metric("gateway_compute_units_total", { label: "eth" });
    const send = (body: string, label = "eth", key: string = KEYS.all) => gw.call(label, `/${key}`, { body });
    expect((await send(rpcBody("eth_blockNumber"))).status).toBe(200); // 10
    expect((await send(rpcBody("eth_getLogs", [{ fromBlock: "0x1", toBlock: "0x2" }]))).status).toBe(200); // 75
    const batch = JSON.stringify([
      {
        jsonrpc: "2.0",
        id: 1,
        method: "eth_call",
        params: [{ to: "0x0000000000000000000000000000000000000000" }, "latest"],
      },
      {
        jsonrpc: "2.0",
        id: 2,
        method: "eth_getBalance",
        params: ["0x0000000000000000000000000000000000000000", "latest"],
      },
    ]);
    expect((await send(batch)).status).toBe(200); // 26 + 20
    // refused by the gateway: a method the registry does not allow costs nothing
    expect(((await send(rpcBody("admin_peers"))).json as { error?: unknown }).error).toBeDefined();
    expect(await gw.metric("gateway_compute_units_total", { label: "eth" })).toBe(before + 10 + 75 + 26 + 20);
    expect(gw.logs.some((line) => line.includes('"method":"eth_getLogs"') && line.includes('"cu":75'))).toBe(
      true,
    );
  });

  it("a log range split into sub-ranges costs a call for each", async () => {
    const before = await gw.metric("gateway_compute_units_total", { label: "eth" });
    // 2,000 blocks at 500 a sub-range: four calls at the node
    const wide = rpcBody("eth_getLogs", [{ fromBlock: "0x1", toBlock: "0x7d0" }]);
    const answer = await gw.call("eth", `/${KEYS.all}`, { body: wide });
    expect(answer.status).toBe(200);
    expect(answer.headers["x-compute-units"]).toBe(String(4 * 75));
    expect(await gw.metric("gateway_compute_units_total", { label: "eth" })).toBe(before + 4 * 75);
    expect(gw.logs.some((line) => line.includes('"parts":4') && line.includes('"cu":300'))).toBe(true);
  });

  it("a call an archive node answers costs the interface's archive factor times as much", async () => {
    const before = await gw.metric("gateway_compute_units_total", { label: "eth-archive" });
    expect((await gw.call("eth-archive", `/${KEYS.all}`, { body: rpcBody("eth_blockNumber") })).status).toBe(
      200,
    );
    expect(await gw.metric("gateway_compute_units_total", { label: "eth-archive" })).toBe(before + 2 * 10);
  });

  // A customer adds up its bill from its answers (docs/compute-units.md): each answer's X-Compute-Units is
  // what its key's usage and the units' counter were told, 0 for a refusal.
  it("every answer says what it cost, as the access log and the counter count it", async () => {
    const spent = async () =>
      (await gw.metric("gateway_compute_units_total", { label: "eth" })) +
      (await gw.metric("gateway_compute_units_total", { label: "eth-archive" }));
    const before = await spent();
    const call = (method: string, params: unknown[] = [], id = 1) => ({ jsonrpc: "2.0", id, method, params });
    const sent = [
      ["eth", call("eth_blockNumber")],
      ["eth", call("eth_getLogs", [{ fromBlock: "0x1", toBlock: "0x2" }])],
      [
        "eth",
        [
          call("eth_blockNumber", [], 1),
          call("admin_peers", [], 2),
          call("eth_getBalance", ["0x00", "latest"], 3),
        ],
      ],
      ["eth", call("admin_peers")],
      ["eth", call("eth_gasPrice")],
      ["eth-archive", call("eth_blockNumber")],
    ] as const;
    let total = 0;
    for (const [label, body] of sent) {
      const answer = await gw.call(label, `/${KEYS.all}`, { body: JSON.stringify(body) });
      const header = answer.headers["x-compute-units"];
      expect(header, JSON.stringify(body)).toMatch(/^\d+$/);
      const line = gw.logs
        .map((l) => JSON.parse(l))
        .find((l) => l.requestId === answer.headers["x-request-id"]);
      expect(Number(header), JSON.stringify(body)).toBe(line?.cu ?? 0);
      total += Number(header);
    }
    // 10, 75, a batch's two served calls (10 + 20), a refusal, a node's error (its
    // call's price), and an archive node's answer at twice
    expect(total).toBe(10 + 75 + 30 + 0 + 20 + 20);
    expect(await spent()).toBe(before + total);
  });

  // written on the raw socket, not through a ServerResponse: they had the request id and no price
  it("a refused WebSocket upgrade and a request Node's parser refuses say they cost 0", async () => {
    const upgrade = await rawRequest(
      gw.port,
      `GET /FNnotAKey00000000000000000000000 HTTP/1.1\r\nHost: eth.${DOMAIN}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    expect(upgrade.status).toBe(401);
    expect(upgrade.headers).toMatchObject({ "x-compute-units": "0", "x-request-id": expect.any(String) });
    const malformed = await rawRequest(gw.port, "GET / HTTP/1.1\r\nHost eth\r\n\r\n");
    expect(malformed.status).toBe(400);
    expect(malformed.headers["x-compute-units"]).toBe("0");
  });
});

describe("a cached answer costs the plan's cachedShare, whether or not the plan has a quota", () => {
  it("on a plan without a quota: a miss at its full price, a hit at half", async () => {
    const key = "FNhalfNoQuota00000000000000000000";
    const node = await startLoopbackNode(
      jsonRpcResponder({ eth_chainId: "0x1", eth_gasPrice: "0x3b9aca00", net_version: "1" }),
    );
    const shared = TEST_PLANS.shared as PlanSpec;
    /** What the key's usage was told of each request: its units, and its batch's calls by method. */
    const recorded: Parameters<UsageRecorder["record"]>[] = [];
    const gw = await startGateway({
      upstreams: { eth: [node.url] },
      cache: { ...DEFAULT_CACHE, enabled: true },
      plans: { ...TEST_PLANS, half: { ...shared, dailyQuota: 0, monthlyQuota: 0, cachedShare: 0.5 } },
      keys: [{ key, networks: "*", plan: "half", rate: { perSecond: 1e6, burst: 1e6 } }],
      usage: { record: (...args) => recorded.push(args) },
    });
    try {
      const spent = () => gw.metric("gateway_compute_units_total", { label: "eth" });
      const before = await spent();
      const first = await gw.call("eth", `/${key}`, { body: rpcBody("eth_chainId") });
      expect(first.headers["x-cache"]).toBe("miss");
      expect(first.headers["x-compute-units"]).toBe("5");
      expect(await spent()).toBe(before + 5);
      const second = await gw.call("eth", `/${key}`, { body: rpcBody("eth_chainId") });
      expect(second.headers["x-cache"]).toBe("hit");
      expect(second.headers["x-compute-units"]).toBe(String(Math.round(5 * 0.5)));
      expect(await spent()).toBe(before + 5 + Math.round(5 * 0.5));
      // a batch answered in part from the cache: its held call at half, the rest in full (eth_gasPrice
      // costs the interface's default, 20); identical calls in it: one at full, its copy at half
      const batch = async (calls: [string, number][]) =>
        gw.call("eth", `/${key}`, {
          body: JSON.stringify(calls.map(([method, id]) => ({ jsonrpc: "2.0", id, method, params: [] }))),
        });
      const mark = await spent();
      const mixed = await batch([
        ["eth_chainId", 2],
        ["eth_gasPrice", 3],
      ]);
      expect(mixed.headers["x-cache"]).toBe("miss");
      expect(mixed.headers["x-compute-units"]).toBe(String(Math.round(20 + 5 * 0.5)));
      expect(await spent()).toBe(mark + Math.round(20 + 5 * 0.5));
      // and the key's usage by method weighs each method at what its calls cost: eth_chainId at half
      const [, , , , units, detail] = recorded.at(-1) ?? [];
      expect(units).toBe(Math.round(20 + 5 * 0.5));
      expect(detail?.parts).toEqual([
        { method: "eth_chainId", calls: 1, weight: 2.5 },
        { method: "eth_gasPrice", calls: 1, weight: 20 },
      ]);
      const twice = await batch([
        ["net_version", 4],
        ["net_version", 5],
      ]);
      expect(twice.headers["x-cache"]).toBe("miss");
      expect(twice.headers["x-compute-units"]).toBe(String(Math.round(5 + 5 * 0.5)));
      expect(await spent()).toBe(mark + Math.round(20 + 5 * 0.5) + Math.round(5 + 5 * 0.5));
      // a batch the cache answers whole: all of it at half, and its header says so
      const kept = await batch([
        ["eth_chainId", 6],
        ["net_version", 7],
      ]);
      expect(kept.headers["x-cache"]).toBe("hit");
      expect(kept.headers["x-compute-units"]).toBe(String(Math.round((5 + 5) * 0.5)));
      expect(await spent()).toBe(
        mark + Math.round(20 + 5 * 0.5) + Math.round(5 + 5 * 0.5) + Math.round((5 + 5) * 0.5),
      );
    } finally {
      await gw.close();
      await node.close();
    }
  });
});

// A range split into sub-ranges costs a call for each: its rate and quota hold that price before it goes,
// not its one call's (a split eth_getLogs went past a quota and a burst it was checked against at 75).
describe("a split range's price is held before it goes", () => {
  it("a quota it would pass refuses it, and a burst it exceeds too, with no call at the node", async () => {
    const node = await startLoopbackNode(jsonRpcResponder({ eth_getLogs: [] }));
    const shared = TEST_PLANS.shared as PlanSpec;
    const keys = { quota: "FNsplitQuota000000000000000000000", burst: "FNsplitBurst000000000000000000000" };
    const gw = await startGateway({
      upstreams: { eth: [node.url] },
      blockRanges: { eth: { eth_getLogs: { splitAbove: 500 } } },
      plans: {
        ...TEST_PLANS,
        // 250 units a day: one eth_getLogs (75) fits, four sub-ranges (300) do not
        small: { ...shared, dailyQuota: 250, monthlyQuota: 0 },
        narrow: {
          ...shared,
          dailyQuota: 0,
          monthlyQuota: 0,
          computeUnitRate: { perSecond: 100, burst: 200 },
        },
      },
      keys: [
        { key: keys.quota, networks: "*", plan: "small", rate: { perSecond: 1e6, burst: 1e6 } },
        { key: keys.burst, networks: "*", plan: "narrow", rate: { perSecond: 1e6, burst: 1e6 } },
      ],
    });
    try {
      // 2,000 blocks at 500 a sub-range: four calls at the node, 300 units
      const wide = rpcBody("eth_getLogs", [{ fromBlock: "0x1", toBlock: "0x7d0" }]);
      const narrow = rpcBody("eth_getLogs", [{ fromBlock: "0x1", toBlock: "0x2" }]);
      const overQuota = await gw.call("eth", `/${keys.quota}`, { body: wide });
      expect(overQuota.status).toBe(402);
      expect((await gw.call("eth", `/${keys.quota}`, { body: narrow })).status).toBe(200);
      const overBurst = await gw.call("eth", `/${keys.burst}`, { body: wide });
      expect(overBurst.status).toBe(413);
      expect(overBurst.text).toContain("REQUEST_OVER_BURST");
      expect(node.requests.filter((r) => r.body.includes("eth_getLogs"))).toHaveLength(1);
    } finally {
      await gw.close();
      await node.close();
    }
  });
});
