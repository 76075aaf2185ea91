import { ApiPromise, WsProvider } from "@polkadot/api";
import type { ApiOptions } from "@polkadot/api/types";
import kusamaMetadata from "@polkadot/types-support/metadata/static-kusama";
import polkadotMetadata, { version } from "@polkadot/types-support/metadata/static-polkadot";
import { compactAddLength, hexToU8a, u8aToHex } from "@polkadot/util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import {
  type ActiveSubscription,
  type LoopbackWsNode,
  SharedSubstrateChain,
  SUBSTRATE_GENESIS,
  startLoopbackWsNode,
  substrateNode,
  WsRpcError,
} from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// A runtime upgrade as a Polkadot node shows it to polkadot.js over a WebSocket. polkadot-sdk
// substrate/client/rpc/src/state/state_full.rs `subscribe_runtime_version`: on each new best block the node
// reads the best block's runtime version and pushes it when it changed; `metadata(None)` and
// `runtime_version(None)` read the best block (`block_or_best`). So once the node pushed the new version,
// its state_getMetadata() without a hash answers the new runtime's metadata. polkadot.js (api/base/Init.js
// `_subscribeUpdates`) reacts to the push by calling state_getMetadata() with no hash on the same socket and
// decorates the api with what it gets. The push carries no height, and the gateway may not have seen the
// new head yet: a state_getMetadata() another caller asked before the upgrade (kept "while the head stays")
// must not answer it, else polkadot.js runs the new runtime version with the old runtime's metadata (its
// calls' indices, its constants) and signs with the old call indices. Registry `subscriptions.headChanges`.
const V1 = version;
const V2 = { ...version, specVersion: version.specVersion + 1 };

for (const cached of [true, false])
  describe(`runtime upgrade pushed by state_subscribeRuntimeVersion, cache ${cached ? "on" : "off"}`, () => {
    const chain = new SharedSubstrateChain();
    let upgraded = false;
    const versionSubs: ActiveSubscription[] = [];
    let node: LoopbackWsNode;
    let gw: RunningGateway;
    let restore: () => void = () => {};
    const metadata = () => (upgraded ? kusamaMetadata : polkadotMetadata);

    beforeAll(async () => {
      restore = resolveTestHosts();
      const base = substrateNode({ chain });
      const byNumber = base.results?.chain_getBlockHash as (params: unknown) => unknown;
      node = await startLoopbackWsNode({
        ...base,
        results: {
          ...base.results,
          chain_getBlockHash: (params: unknown) =>
            Array.isArray(params) && (params[0] === 0 || params[0] === "0x0")
              ? SUBSTRATE_GENESIS
              : byNumber(params),
          state_getRuntimeVersion: () => (upgraded ? V2 : V1),
          chain_getRuntimeVersion: () => (upgraded ? V2 : V1),
          state_getMetadata: () => metadata(),
          state_call: (params: unknown) => {
            const [method] = params as [string, string];
            if (method === "Metadata_metadata_versions") return "0x040e000000";
            if (method === "Metadata_metadata_at_version")
              return `0x01${u8aToHex(compactAddLength(hexToU8a(metadata())), -1, false)}`;
            throw new WsRpcError(-32000, `unexpected state_call ${method}`);
          },
        },
        subscriptions: {
          ...base.subscriptions,
          state_subscribeRuntimeVersion: {
            notification: "state_runtimeVersion",
            unsubscribe: "state_unsubscribeRuntimeVersion",
            onSubscribe: (s) => {
              versionSubs.push(s);
              s.notify(upgraded ? V2 : V1);
            },
          },
        },
      });
      gw = await startGateway({
        upstreams: { dot: [node.url] },
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
        // an answer at the head is kept a minute here, not half a block time: what ends it in these cases is
        // the version's push or a head that moves, never its age (a loaded host takes seconds to connect)
        cache: { ...DEFAULT_CACHE, enabled: cached, headMaxAgeMs: 60_000 },
      });
      const dot = () => gw.gateway.upstreams.groups().find((g) => g.label === "dot");
      await eventually(() => dot()?.served.height === chain.head, 10_000, "the served head read");
    });
    afterAll(async () => {
      restore();
      await gw?.close();
      await node?.close();
    });

    it("polkadot.js decorates the upgraded runtime with the upgraded runtime's metadata", async () => {
      // another dApp read the metadata at the head before the upgrade (polkadot.js apps, a block explorer)
      const before = await gw.call("dot", `/${KEYS.all}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "state_getMetadata", params: [] }),
        headers: { "content-type": "application/json" },
      });
      expect((before.json as { result: string }).result).toBe(polkadotMetadata);

      const provider = new WsProvider(`ws://dot.${DOMAIN}:${gw.port}/${KEYS.all}`) as NonNullable<
        ApiOptions["provider"]
      >;
      const api = await ApiPromise.create({ provider, noInitWarn: true });
      try {
        expect(api.runtimeVersion.specVersion.toNumber()).toBe(V1.specVersion);
        expect(api.consts.balances?.existentialDeposit?.toString()).toBe("10000000000");
        await eventually(() => versionSubs.some((s) => s.active), 3_000, "the runtime version subscription");

        // the upgrade is enacted in the next block: the node's best block runs V2, and it pushes V2
        chain.produce();
        upgraded = true;
        for (const s of versionSubs) if (s.active) s.notify(V2);
        await eventually(
          () => api.runtimeVersion.specVersion.toNumber() === V2.specVersion,
          5_000,
          "polkadot.js to take the new runtime version",
        );
        // the node was asked for it after the upgrade, and polkadot.js holds what the node answers now
        expect(node.methods().slice(node.methods().lastIndexOf("state_subscribeRuntimeVersion"))).toContain(
          "state_getMetadata",
        );
        expect(api.runtimeMetadata.toHex()).toBe(kusamaMetadata);
        // Kusama's existential deposit, from the metadata the node now serves
        expect(api.consts.balances?.existentialDeposit?.toString()).not.toBe("10000000000");
      } finally {
        await api.disconnect();
      }
    });

    // with the cache off there is nothing kept to leave: the case is the cache's alone
    if (cached)
      it("a subscription's first push of the version the label has leaves the head's answers kept", async () => {
        const ask = () =>
          gw.call("dot", `/${KEYS.all}`, {
            body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "state_getMetadata", params: [] }),
            headers: { "content-type": "application/json" },
          });
        await ask();
        expect((await ask()).headers["x-cache"]).toBe("hit");
        const dot = () => gw.gateway.upstreams.groups().find((g) => g.label === "dot");
        const heldAt = { epoch: dot()?.served.epoch, height: dot()?.served.height };
        const provider = new WsProvider(`ws://dot.${DOMAIN}:${gw.port}/${KEYS.all}`) as NonNullable<
          ApiOptions["provider"]
        >;
        const api = await ApiPromise.create({ provider, noInitWarn: true });
        try {
          await eventually(() => versionSubs.filter((s) => s.active).length > 0, 3_000, "the subscription");
          // every polkadot.js that connects subscribes and is pushed the current version: no reason to ask again
          const again = await ask();
          // the block the last test made may be learnt now, from a late push on its connection (a loaded
          // host): a head that moves ends what was kept, as it should. With the head where it was, the
          // version's push must leave it kept
          if (dot()?.served.height === heldAt.height) {
            expect(dot()?.served.epoch).toBe(heldAt.epoch);
            expect(again.headers["x-cache"]).toBe("hit");
          }
          expect((again.json as { result: string }).result).toBe(kusamaMetadata);
        } finally {
          await api.disconnect();
        }
      });
  });
