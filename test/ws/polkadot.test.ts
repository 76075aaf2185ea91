import { ApiPromise, WsProvider } from "@polkadot/api";
import type { ApiOptions } from "@polkadot/api/types";
import { version } from "@polkadot/types-support/metadata/static-polkadot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import {
  type LoopbackWsNode,
  SUBSTRATE_GENESIS,
  SUBSTRATE_HEAD_NUMBER,
  startLoopbackWsNode,
  substrateNode,
  type WsNodeConnection,
  waitUntil,
} from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// @polkadot/api's WsProvider, unmodified, at `ws://dot.gw.test:<port>/<KEY>` through the gateway to a
// loopback node that answers like a Polkadot node and pushes a new head every 50 ms to each
// chain_subscribeNewHeads. Then ApiPromise.create on the same kind of provider: the node serves the real
// runtime version, method list and v14 metadata polkadot.js ships, so the runtime is decorated for real.

interface Header {
  readonly number: string;
  readonly parentHash: string;
}

/** What the node saw on one client's upstream connection, with the key looked for everywhere. */
function expectNoKey(connection: WsNodeConnection): void {
  expect(connection.url).toBe("/");
  expect(JSON.stringify(connection.headers)).not.toContain(KEYS.all);
  for (const message of connection.messages) expect(message).not.toContain(KEYS.all);
}

describe("@polkadot/api WsProvider through the gateway", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  let url: string;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(substrateNode({ newHeadEveryMs: 50 }));
    gw = await startGateway({ upstreams: { dot: [node.url] } });
    url = `ws://dot.${DOMAIN}:${gw.port}/${KEYS.all}`;
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("connects, calls, subscribes to new heads, unsubscribes and disconnects", async () => {
    const before = node.connections.length;
    // autoConnectMs 0: no reconnect loop once the test disconnects
    const provider = new WsProvider(url, 0);
    await provider.connect();
    await provider.isReady;
    expect(provider.isConnected).toBe(true);
    expect(node.connections.length).toBe(before + 1);
    const upstream = node.latest();

    expect(await provider.send("system_chain", [])).toBe("Polkadot");

    const heads: Header[] = [];
    let gotThree: () => void = () => {};
    const three = new Promise<void>((resolve) => {
      gotThree = resolve;
    });
    const subscription = await provider.subscribe(
      "chain_newHead",
      "chain_subscribeNewHeads",
      [],
      (error: Error | null, header: Header) => {
        if (error !== null) return;
        heads.push(header);
        if (heads.length === 3) gotThree();
      },
    );
    expect(typeof subscription).toBe("string");
    expect(upstream.subscriptions.has(String(subscription))).toBe(true);
    await three;
    const numbers = heads.slice(0, 3).map((h) => Number(h.number));
    expect(numbers).toEqual([
      SUBSTRATE_HEAD_NUMBER + 1,
      SUBSTRATE_HEAD_NUMBER + 2,
      SUBSTRATE_HEAD_NUMBER + 3,
    ]);

    expect(await provider.unsubscribe("chain_newHead", "chain_unsubscribeNewHeads", subscription)).toBe(true);
    // the node's feed stopped: no header is pushed any more
    expect(upstream.subscriptions.size).toBe(0);
    const received = heads.length;
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(heads.length).toBe(received);

    const disconnected = new Promise<void>((resolve) => provider.on("disconnected", () => resolve()));
    await provider.disconnect();
    await disconnected;
    expect(provider.isConnected).toBe(false);
    // the client left: its upstream socket is closed too
    await waitUntil(() => !upstream.isOpen, 3_000, "the upstream socket to close");
    expect(node.openConnections()).toBe(0);

    expect(upstream.methods()).toEqual([
      "system_chain",
      "chain_subscribeNewHeads",
      "chain_unsubscribeNewHeads",
    ]);
    expectNoKey(upstream);
  });

  it("ApiPromise.create initialises over the socket and api.rpc.chain.subscribeNewHeads gets pushed headers", async () => {
    // the default autoConnect, as a user writes it; api.disconnect() switches it off
    const provider = new WsProvider(url) as NonNullable<ApiOptions["provider"]>;
    const api = await ApiPromise.create({ provider, noInitWarn: true });
    const upstream = node.latest();
    try {
      expect(api.genesisHash.toHex()).toBe(SUBSTRATE_GENESIS);
      expect(api.runtimeChain.toString()).toBe("Polkadot");
      expect(api.runtimeVersion.specVersion.toNumber()).toBe(version.specVersion);
      expect(api.registry.chainTokens).toEqual(["DOT"]);
      expect(api.consts.balances?.existentialDeposit?.toString()).toBe("10000000000");

      const numbers: number[] = [];
      let unsubscribe: () => void = () => {};
      await new Promise<void>((resolve, reject) => {
        api.rpc.chain
          .subscribeNewHeads((header) => {
            numbers.push(header.number.toNumber());
            if (numbers.length === 3) resolve();
          })
          .then((unsub) => {
            unsubscribe = unsub;
          }, reject);
      });
      unsubscribe();
      expect(numbers).toEqual([
        SUBSTRATE_HEAD_NUMBER + 1,
        SUBSTRATE_HEAD_NUMBER + 2,
        SUBSTRATE_HEAD_NUMBER + 3,
      ]);
      await waitUntil(() => upstream.subscriptions.size === 1, 3_000, "the new-heads unsubscribe upstream");
    } finally {
      await api.disconnect();
    }
    await waitUntil(() => !upstream.isOpen, 3_000, "the upstream socket to close");
    const methods = upstream.methods();
    expect(methods).toEqual(
      expect.arrayContaining([
        "chain_getBlockHash",
        "state_getRuntimeVersion",
        "system_chain",
        "system_properties",
        "rpc_methods",
        "state_subscribeRuntimeVersion",
        // the legacy names: polkadot.js picks them because the node's rpc_methods lists them
        "chain_subscribeNewHead",
        "chain_unsubscribeNewHead",
      ]),
    );
    expectNoKey(upstream);
  });

  it("the node's one port serves HTTP too, as Substrate's RPC server does: HTTP callers and the gateway's prober reach it", async () => {
    const probed = await startGateway({
      upstreams: { dot: [node.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    try {
      await eventually(
        async () =>
          (await probed.metric("gateway_upstream_head", { label: "dot" })) === SUBSTRATE_HEAD_NUMBER,
        5_000,
        "the prober's reading of the node's head over HTTP",
      );
      const r = await probed.call("dot", `/${KEYS.all}`, { body: rpcBody("chain_getBlockHash", [0], 5) });
      expect(r.json).toEqual({ jsonrpc: "2.0", id: 5, result: SUBSTRATE_GENESIS });
      expect(node.httpMethods).toContain("chain_getBlockHash");
    } finally {
      await probed.close();
    }
    // a subscription over HTTP is jsonrpsee's bare internal error
    const direct = await fetch(node.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: rpcBody("chain_subscribeNewHeads", [], 1),
    });
    expect(await direct.json()).toEqual({
      jsonrpc: "2.0",
      id: 1,
      error: { code: -32603, message: "Internal error" },
    });
  });
});
