import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE } from "../../src/config/defaults.js";
import type { PlanSpec } from "../../src/config/types.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, type RunningGateway, startGateway, TEST_KEYS, TEST_PLANS } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A connection whose quota is spent closes (4402) once the calls it was charged for are answered
// (docs/plans.md): a call waiting on the same connection's call in flight gets its answer first, and so
// does that call; the close came between them, and the first call's answer, paid for, was lost.

const BLOCK = { number: "0x5", parentHash: `0x${"cd".repeat(32)}`, transactions: [] };
const KEY = "FNwsTightQuota000000000000000000";

describe("a spent quota and a call waiting on its own connection's call", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  let release: () => void = () => {};
  let held = Promise.resolve();
  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(
      evmNode({ eth_getBlockByHash: ([hash]: [string]) => held.then(() => ({ ...BLOCK, hash })) }),
    );
    gw = await startGateway({
      upstreams: { eth: [node.url] },
      cache: { ...DEFAULT_CACHE, enabled: true },
      plans: { ...TEST_PLANS, tight: { ...(TEST_PLANS.shared as PlanSpec), dailyQuota: 40 } },
      keys: [...TEST_KEYS, { key: KEY, networks: "*", plan: "tight", rate: { perSecond: 1e6, burst: 1e6 } }],
    });
  });
  afterAll(async () => {
    release();
    await gw?.close();
    await node?.close();
    restore?.();
  });
  it("sends both answers before the close", async () => {
    held = new Promise((r) => {
      release = r;
    });
    const hash = `0x${"07".repeat(32)}`;
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEY}`);
    const call = (id: string, method: string, params: unknown[]) =>
      client.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    call("a", "eth_getBlockByHash", [hash, false]); // 20, a miss at the node
    await eventually(() => node.methods().includes("eth_getBlockByHash"), 2_000, "a at node");
    call("b", "eth_getBlockByHash", [hash, false]); // 20, follows a
    call("c", "eth_chainId", []); // 5: past the quota of 40
    await client.waitFor((t) => t.includes('"id":"c"'));
    release();
    expect((await client.closed).code).toBe(4402);
    expect(client.received.some((t) => t.includes('"id":"b"'))).toBe(true);
    expect(client.received.some((t) => t.includes('"id":"a"'))).toBe(true);
  });
});
