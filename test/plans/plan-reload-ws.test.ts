import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PLANS, PLAN_FIELDS } from "../../src/config/defaults.js";
import type { GatewayConfig, PlanSpec } from "../../src/config/types.js";
import { DOMAIN, type RunningGateway, startGateway, TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A WebSocket connection's messages are checked against the plan terms it opened with (docs/plans.md). A
// reload that changes a plan (a method taken away, a lower quota or rate) closes the connections on it with
// 1008, as a change of a key's settings does, so that none goes on under terms the operator withdrew; a
// reload that leaves a plan as it was leaves its connections open.

const plan = (fields: Partial<PlanSpec>): PlanSpec => ({
  ...PLAN_FIELDS,
  computeUnitRate: { perSecond: 1_000_000, burst: 1_000_000 },
  ...fields,
});
const RATE = { perSecond: 10_000, burst: 10_000 };
const CHANGED = "FNplanChanged00000000000000000";
const KEPT = "FNplanKept00000000000000000000";
/** On a plan the config does not have at first: served on the shared plan's terms until it has. */
const GOLD = "FNplanGold00000000000000000000";

describe("a plan changed by a reload, under an open WebSocket", () => {
  let node: LoopbackNode;
  let ws: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void = () => {};
  const plans = (changing: PlanSpec) => ({
    ...DEFAULT_PLANS,
    changing,
    kept: plan({ dailyQuota: 10_000 }),
  });

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_chainId: "0x1", eth_blockNumber: "0x10" }));
    ws = await startLoopbackWsNode({ results: { eth_chainId: "0x1", eth_blockNumber: "0x10" } });
    restore = resolveTestHosts();
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, ws: ws.wsUrl }] },
      plans: plans(plan({})),
      keys: [
        ...TEST_KEYS,
        { key: CHANGED, networks: "*", plan: "changing", rate: RATE },
        { key: KEPT, networks: "*", plan: "kept", rate: RATE },
        { key: GOLD, networks: "*", plan: "gold", rate: RATE },
      ],
    });
  });
  afterAll(async () => {
    restore();
    await gw?.close();
    await Promise.all([node?.close(), ws?.close()]);
  });

  it("closes the connections on the changed plan with 1008, and keeps the others", async () => {
    const changed = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${CHANGED}`);
    const kept = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEPT}`);
    try {
      expect(await changed.call("eth_chainId")).toMatchObject({ result: "0x1" });
      // a reload with the same plans: nothing closes
      gw.gateway.reload({ ...gw.config, plans: plans(plan({})) } as GatewayConfig, gw.keys);
      expect(await changed.call("eth_chainId")).toMatchObject({ result: "0x1" });
      // the operator takes eth_chainId off the plan
      gw.gateway.reload(
        { ...gw.config, plans: plans(plan({ disabledMethods: ["eth_chainId"] })) } as GatewayConfig,
        gw.keys,
      );
      expect(await changed.closed).toMatchObject({
        code: 1008,
        reason: "the API key's plan changed: connect again",
      });
      expect(await kept.call("eth_blockNumber")).toMatchObject({ result: "0x10" });
      // connected again, the key is on the new terms
      const again = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${CHANGED}`);
      try {
        expect(await again.call("eth_chainId")).toMatchObject({
          error: { data: { code: "METHOD_NOT_ON_PLAN" } },
        });
      } finally {
        again.close();
      }
    } finally {
      changed.close();
      kept.close();
    }
  });

  it("keeps them open for a change of what the control plane alone reads (maxKeys, orderable)", async () => {
    gw.gateway.reload({ ...gw.config, plans: plans(plan({})) } as GatewayConfig, gw.keys);
    const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${CHANGED}`);
    try {
      gw.gateway.reload(
        { ...gw.config, plans: plans(plan({ maxKeys: 7, orderable: true })) } as GatewayConfig,
        gw.keys,
      );
      expect(await socket.call("eth_chainId")).toMatchObject({ result: "0x1" });
      expect(socket.isOpen).toBe(true);
    } finally {
      socket.close();
    }
  });

  it("closes a connection of a key whose plan the config gained, served until then on the shared plan's terms", async () => {
    const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${GOLD}`);
    try {
      expect(await socket.call("eth_chainId")).toMatchObject({ result: "0x1" });
      gw.gateway.reload(
        {
          ...gw.config,
          plans: { ...plans(plan({})), gold: plan({ disabledMethods: ["eth_chainId"] }) },
        } as GatewayConfig,
        gw.keys,
      );
      expect(await socket.closed).toMatchObject({ code: 1008 });
    } finally {
      socket.close();
    }
  });
});
