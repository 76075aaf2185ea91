import { ApiPromise, WsProvider } from "@polkadot/api";
import type { ApiOptions } from "@polkadot/api/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileComputeUnits } from "../../codegen/compute-units.js";
import type { InterfaceSpec } from "../../codegen/registry-types.js";
import { substratePolicy } from "../../generated/policies.js";
import type { PlanSpec } from "../../src/config/types.js";
import { checkedSettings } from "../../src/keys/key-settings.js";
import {
  DOMAIN,
  KEYS,
  type RunningGateway,
  startGateway,
  TEST_KEYS,
  TEST_PLANS,
} from "../support/gateway.js";
import { type LoopbackWsNode, startLoopbackWsNode, substrateNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// A Substrate node serves one method under several names (sc-rpc-api: `#[subscription(name =
// "chain_subscribeNewHeads", aliases = ["subscribe_newHead", "chain_subscribeNewHead"], …)]`, `#[method(name =
// "state_call", aliases = ["state_callAt"])]`; registry `aliases`). polkadot.js's api.rpc.chain.subscribeNewHeads
// sends chain_subscribeNewHead (@polkadot/types interfaces/chain/rpc.js `pubsub: ['newHead',
// 'subscribeNewHead', …]`). A key's method list and a plan's disabledMethods naming one name hold for all.
const KEY = "FNtestPolkadotMethodAliases0000";
const BY_ALIAS = "FNtestPolkadotMethodAliases0001";

const rpc = (method: string) =>
  JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: ["Metadata_metadata_versions", "0x"] });

describe("a key's method list names a method by any of its names", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void = () => {};

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(substrateNode({ newHeadEveryMs: 50 }));
    gw = await startGateway({
      upstreams: { dot: [node.url] },
      keys: [
        ...TEST_KEYS,
        {
          key: KEY,
          networks: "*",
          rate: { perSecond: 10_000, burst: 10_000 },
          settings: {
            methods: [
              "rpc_methods",
              "chain_getBlockHash",
              "chain_getHeader",
              "state_getRuntimeVersion",
              "state_getMetadata",
              "state_call",
              "system_chain",
              "system_properties",
              "state_subscribeRuntimeVersion",
              "chain_subscribeNewHeads",
            ],
          },
        },
        // the other way round: the list names the alias, the call the method's own name
        {
          key: BY_ALIAS,
          networks: "*",
          rate: { perSecond: 10_000, burst: 10_000 },
          settings: { methods: ["state_callAt"] },
        },
      ],
    });
  });
  afterAll(async () => {
    restore();
    await gw?.close();
    await node?.close();
  });

  it("api.rpc.chain.subscribeNewHeads (chain_subscribeNewHead) is allowed by a list naming chain_subscribeNewHeads", async () => {
    const provider = new WsProvider(`ws://dot.${DOMAIN}:${gw.port}/${KEY}`) as NonNullable<
      ApiOptions["provider"]
    >;
    const api = await ApiPromise.create({ provider, noInitWarn: true });
    try {
      const numbers: number[] = [];
      const unsubscribe = await api.rpc.chain.subscribeNewHeads((header) => {
        numbers.push(header.number.toNumber());
      });
      const deadline = Date.now() + 3_000;
      while (numbers.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      unsubscribe();
      expect(numbers.length).toBeGreaterThanOrEqual(2);
      expect(node.methods()).toContain("chain_subscribeNewHead");
    } finally {
      await api.disconnect();
    }
  });

  it("state_call is allowed by a list naming state_callAt, and nothing else is", async () => {
    const headers = { "content-type": "application/json" };
    const own = await gw.call("dot", `/${BY_ALIAS}`, { body: rpc("state_call"), headers });
    expect(own.status).toBe(200);
    expect((own.json as { error?: unknown }).error).toBeUndefined();
    const other = await gw.call("dot", `/${BY_ALIAS}`, { body: rpc("state_getMetadata"), headers });
    expect(JSON.stringify(other.json)).toContain("KEY_SETTING_REFUSED");
  });

  it("saving a key's method list takes a method's every name", () => {
    const known = new Set(substratePolicy.jsonrpc?.methods.keys());
    const methods = ["chain_subscribeNewHead", "subscribe_newHead", "state_callAt", "chain_getHead"];
    expect(checkedSettings({ methods }, known).methods).toEqual(methods);
  });
});

// a plan's `disabledMethods: ["state_call"]` (docs/plans.md) must refuse its alias state_callAt too
describe("a plan's disabledMethods refuses a method by any of its names", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    node = await startLoopbackWsNode(substrateNode());
    gw = await startGateway({
      upstreams: { dot: [node.url] },
      plans: {
        ...TEST_PLANS,
        shared: { ...(TEST_PLANS.shared as PlanSpec), disabledMethods: ["state_call", "chain_getHead"] },
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });
  const call = (method: string) =>
    gw.call("dot", `/${KEYS.all}`, { body: rpc(method), headers: { "content-type": "application/json" } });

  it("refuses state_callAt as it refuses state_call, and chain_getBlockHash as chain_getHead", async () => {
    const direct = await call("state_call");
    expect(direct.status).not.toBe(200);
    const before = node.httpMethods.length;
    const alias = await call("state_callAt");
    expect(alias.status).toBe(direct.status);
    expect(JSON.stringify(alias.json)).toContain("METHOD_NOT_ON_PLAN");
    const own = await call("chain_getBlockHash");
    expect(own.status).toBe(direct.status);
    expect(node.httpMethods.slice(before)).toEqual([]);
  });
});

describe("compute units name a method by its own name", () => {
  it("an alias costs what its method costs, unless named itself", () => {
    const units = compileComputeUnits([
      {
        computeUnits: { default: 20, methods: { state_call: 50, state_getStorageAt: 5 } },
        methods: { shared: ["state_call", "state_callAt", "state_getStorage", "state_getStorageAt"] },
        aliases: { state_callAt: "state_call", state_getStorageAt: "state_getStorage" },
      } as unknown as InterfaceSpec,
    ]);
    expect(new Map(units.methods)).toEqual(
      new Map([
        ["state_call", 50],
        ["state_callAt", 50],
        ["state_getStorageAt", 5],
      ]),
    );
  });
});
