import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_HEALTH, DEFAULT_SHARED_LIMITS } from "../../src/config/defaults.js";
import { createLogger } from "../../src/log.js";
import { openSharedState, type SharedState } from "../../src/proxy/shared-state.js";
import type { UpstreamGroup } from "../../src/upstream/group.js";
import type { HandleShare } from "../../src/upstream/node-states.js";
import { SharedHandles } from "../../src/upstream/shared-handles.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { needServices, SHARED_REDIS_URL } from "../support/services.js";

// A filter made through one gateway instance and polled through another (docs/upstreams.md, "State a node
// made: filters"): a dApp behind a load balancer, whose ethers or viem polls its filter over new
// connections. Each instance has both anvils; only the one that made the filter knows it, and the other
// answers "filter not found". Through Redis (database 7, the suite's), every poll reaches the right one,
// and another key's poll is refused as it is on the instance that saw the filter made.

const REDIS = `${SHARED_REDIS_URL}/7`;
const redis = await needServices("redis");
const POLLS = 8;
const GENESIS = 1_700_000_000;

describe.skipIf(redis.skip)(
  "filters polled through another gateway instance (real Redis, real anvil)",
  () => {
    let nodes: Anvil[];
    /** Each instance's, as a proxy opens it with `sharedLimits`. */
    let shares: SharedState[];
    let a: RunningGateway;
    let b: RunningGateway;

    const rpc = async (gw: RunningGateway, key: string, method: string, params: unknown[]) =>
      (
        await gw.call("eth", `/${key}`, {
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
        })
      ).json as { result?: unknown; error?: { code: number; message: string } };

    beforeAll(async () => {
      // one chain, as the prober wants of a label's nodes
      const chain = { sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 };
      nodes = await Promise.all([startAnvil(chain), startAnvil(chain)]);
      const config = { ...DEFAULT_CONFIG, sharedLimits: { ...DEFAULT_SHARED_LIMITS, redis: REDIS } };
      const open = () =>
        openSharedState(
          config,
          createLogger("error", () => {}),
          () => {},
          2_000,
        );
      shares = await Promise.all([open(), open()]);
      const start = ({ handles }: SharedState) =>
        startGateway({
          upstreams: { eth: nodes.map((node, i) => ({ url: node.url, name: `anvil-${i}` })) },
          health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
          ...(handles === undefined ? {} : { handles }),
        });
      [a, b] = (await Promise.all(shares.map(start))) as [RunningGateway, RunningGateway];
      await Promise.all([everyNodeInRotation(a), everyNodeInRotation(b)]);
    });
    afterAll(async () => {
      await Promise.all([a?.close(), b?.close()]);
      await Promise.all((shares ?? []).map((share) => share.close()));
      await Promise.all((nodes ?? []).map((node) => node.stop()));
    });

    it("each poll through the other instance reaches the node that made it, and its removal too", async () => {
      for (const [make, params] of [
        ["eth_newBlockFilter", []],
        ["eth_newFilter", [{ fromBlock: "latest" }]],
      ] as const) {
        const made = await rpc(a, KEYS.all, make, [...params]);
        expect(typeof made.result, JSON.stringify(made)).toBe("string");
        // two nodes: without the share, each poll finds the filter one time in two
        for (let i = 0; i < POLLS; i++) {
          const polled = await rpc(b, KEYS.all, "eth_getFilterChanges", [made.result]);
          expect(polled.error, `${make}, poll ${i}`).toBeUndefined();
        }
        expect((await rpc(b, KEYS.all, "eth_uninstallFilter", [made.result])).result).toBe(true);
      }
    });

    it("another key's poll of it, through the other instance, is refused FILTER_NOT_FOUND", async () => {
      const made = await rpc(a, KEYS.all, "eth_newBlockFilter", []);
      for (let i = 0; i < POLLS; i++) {
        const polled = await rpc(b, KEYS.ethOnly, "eth_getFilterChanges", [made.result]);
        expect(polled.error, `poll ${i}: ${JSON.stringify(polled)}`).toMatchObject({
          code: -32000,
          data: { code: "FILTER_NOT_FOUND" },
        });
      }
      // and the maker's own polls still reach it
      expect((await rpc(b, KEYS.all, "eth_getFilterChanges", [made.result])).error).toBeUndefined();
    });

    it("with Redis away, each instance keeps the filters it saw made, as without it", async () => {
      const away = new SharedHandles({ redis: "redis://127.0.0.1:9/7", leaseMs: 100, fallbackShare: 1 });
      const c = await startGateway({
        upstreams: { eth: nodes.map((node, i) => ({ url: node.url, name: `anvil-${i}` })) },
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
        handles: away,
      });
      try {
        await everyNodeInRotation(c);
        const made = await rpc(c, KEYS.all, "eth_newBlockFilter", []);
        for (let i = 0; i < POLLS; i++)
          expect((await rpc(c, KEYS.all, "eth_getFilterChanges", [made.result])).error).toBeUndefined();
      } finally {
        await c.close();
        away.close();
      }
    });

    it("a filter's range goes with its node, for the other instance to check its logs' scan", async () => {
      // eth_getFilterLogs is refused once the range is wider than refuseAbove (filter-logs-range-grows.test.ts)
      const share = new SharedHandles({ ...DEFAULT_SHARED_LIMITS, redis: REDIS });
      const group = {
        label: "span-test",
        mount: "/",
        states: { share: undefined },
      } as unknown as UpstreamGroup;
      try {
        expect(await share.ready(2_000)).toBe(true);
        share.attach([group]);
        const made = group.states.share as HandleShare;
        made.made("spanowner", "0x5a", "anvil-0", { method: "eth_newFilter", from: 12, to: undefined });
        made.made("spanowner", "0x5b", "anvil-1", { method: "eth_newFilter", from: 3, to: 40 });
        made.made("spanowner", "0x5c", "anvil-0", undefined);
        await expect
          .poll(() => made.recall("spanowner", ["0x5a", "0x5b", "0x5c"]))
          .toEqual([
            {
              node: "anvil-0",
              owner: "spanowner",
              span: { method: "eth_newFilter", from: 12, to: undefined },
            },
            { node: "anvil-1", owner: "spanowner", span: { method: "eth_newFilter", from: 3, to: 40 } },
            { node: "anvil-0", owner: "spanowner", span: undefined },
          ]);
        // an instance of the build before ranges were shared, mid-deploy, reads the node's value as the
        // node's name: it stays that alone (the range rode in it, and that instance found no such node)
        const client = new Redis(REDIS);
        try {
          expect(await client.get("gateway:handle:span-test:/:node:spanowner:0x5b")).toBe("anvil-1");
          // and what that build wrote, a range after the node, is read as it meant it
          await client.set(
            "gateway:handle:span-test:/:node:spanowner:0x5d",
            "anvil-1\neth_newFilter 7 9",
            "PX",
            60_000,
          );
          await client.set("gateway:handle:span-test:/:owner:0x5d", "spanowner", "PX", 60_000);
          expect(await made.recall("spanowner", ["0x5d"])).toEqual([
            { node: "anvil-1", owner: "spanowner", span: { method: "eth_newFilter", from: 7, to: 9 } },
          ]);
        } finally {
          client.disconnect();
        }
      } finally {
        share.close();
      }
    });

    it("a poll whose filter's word lands a moment after it is asked for still finds it", async () => {
      // on a loaded host, the maker's write to Redis (sent as its answer goes out) can land after a poll
      // another instance was sent at once: the other instance asks again before it decides alone
      const share = new SharedHandles({ ...DEFAULT_SHARED_LIMITS, redis: REDIS });
      const group = {
        label: "late-test",
        mount: "/",
        states: { share: undefined },
      } as unknown as UpstreamGroup;
      const client = new Redis(REDIS);
      try {
        expect(await share.ready(2_000)).toBe(true);
        share.attach([group]);
        const name = `0x${Date.now().toString(16)}`;
        const recalled = (group.states.share as HandleShare).recall("lateowner", [name]);
        // the write lands once the first read has been answered
        await client.ping();
        await client.set(`gateway:handle:late-test:/:owner:${name}`, "makerkey", "PX", 60_000);
        expect(await recalled).toEqual([{ node: undefined, owner: "makerkey", span: undefined }]);
      } finally {
        client.disconnect();
        share.close();
      }
    });

    it("keeps its keys under the gateway's prefix, for as long as a process keeps a filter", async () => {
      const made = await rpc(a, KEYS.all, "eth_newBlockFilter", []);
      const client = new Redis(REDIS);
      try {
        const keys = await client.keys(`gateway:handle:eth:*${String(made.result).slice(2)}`);
        // a block filter has no range: its node and its caller
        expect(keys).toHaveLength(2);
        for (const key of keys) expect(await client.pttl(key)).toBeGreaterThan(9 * 60_000);
        // the key is named by its id, never the API key itself
        expect(keys.join(" ")).not.toContain(KEYS.all);
      } finally {
        client.disconnect();
      }
    });
  },
);
