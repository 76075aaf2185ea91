import { ApiPromise, HttpProvider } from "@polkadot/api";
import type { ApiOptions } from "@polkadot/api/types";
import metadata, { rpc, version } from "@polkadot/types-support/metadata/static-polkadot";
import { compactAddLength, hexToU8a, u8aToHex } from "@polkadot/util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { rpcMethods, sdkUrl, upstreamSawSince, useTestHostsForGlobalFetch } from "./resolve.js";

// @polkadot/api over HttpProvider (not WsProvider), unmodified, through the gateway to a loopback node that
// answers like a Polkadot node: the runtime version, RPC method list and v14 metadata are the real ones
// polkadot.js ships in @polkadot/types-support, so ApiPromise.create decorates a real runtime.
//
// Host resolution: HttpProvider calls global fetch (@polkadot/x-fetch picks globalThis.fetch), so an undici
// Agent with a lookup is installed as the global dispatcher for this file and restored afterwards.

const GENESIS = "0x91b171bb158e2d3848fa23a9f1c25182fb8e20313b2c1eb49219da7a70ce90c3";
const HEAD_HASH = "0x4d1e2f3c2a1b0e9d8c7b6a5948372615f4e3d2c1b0a9f8e7d6c5b4a392817061";
const HEAD = {
  parentHash: "0x8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
  number: "0x1a2b3c4",
  stateRoot: "0x0b1a2c3d4e5f60718293a4b5c6d7e8f90b1a2c3d4e5f60718293a4b5c6d7e8f9",
  extrinsicsRoot: "0x1c2b3a495867768594a3b2c1d0e9f8a71c2b3a495867768594a3b2c1d0e9f8a7",
  digest: { logs: [] },
};
/** Vec<u32> [14]: the runtime offers metadata v14. */
const METADATA_VERSIONS = "0x040e000000";

function stateCall(params: unknown): unknown {
  const [method] = params as [string, string];
  if (method === "Metadata_metadata_versions") return METADATA_VERSIONS;
  // Option<OpaqueMetadata>: Some, then the metadata bytes with their compact length
  if (method === "Metadata_metadata_at_version")
    return `0x01${u8aToHex(compactAddLength(hexToU8a(metadata)), -1, false)}`;
  throw new Error(`unexpected state_call ${method}`);
}

/**
 * chain_getBlockHash as polkadot-sdk answers it (substrate/client/rpc/src/chain/mod.rs block_hash): the best
 * block's hash without a number, block 0's the genesis hash, null above the best block (client.hash(n)).
 */
function blockHash(params: unknown): string | null {
  const at = Array.isArray(params) ? params[0] : undefined;
  if (at === undefined || at === null) return HEAD_HASH;
  const number = typeof at === "string" ? Number.parseInt(at, 16) : Number(at);
  const head = Number(HEAD.number);
  if (number === 0) return GENESIS;
  if (number === head) return HEAD_HASH;
  return number > head ? null : `0x${number.toString(16).padStart(8, "0")}${"e7".repeat(28)}`;
}

describe("@polkadot/api HttpProvider through the gateway", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restoreFetch: () => Promise<void>;
  let api: ApiPromise;

  beforeAll(async () => {
    restoreFetch = useTestHostsForGlobalFetch();
    node = await startLoopbackNode(
      jsonRpcResponder({
        rpc_methods: rpc,
        chain_getBlockHash: blockHash,
        chain_getHeader: HEAD,
        state_getRuntimeVersion: version,
        state_getMetadata: metadata,
        state_call: stateCall,
        system_chain: "Polkadot",
        system_properties: { ss58Format: 0, tokenDecimals: 10, tokenSymbol: "DOT" },
        system_health: { peers: 42, isSyncing: false, shouldHavePeers: true },
      }),
    );
    gw = await startGateway({ upstreams: { dot: [node.url] } });
  });
  afterAll(async () => {
    await api?.disconnect();
    await gw?.close();
    await node?.close();
    await restoreFetch?.();
  });

  it("provider.send answers system_chain, chain_getBlockHash and chain_getHeader", async () => {
    const from = node.requests.length;
    const provider = new HttpProvider(sdkUrl(gw, "dot"));
    expect(await provider.send("system_chain", [])).toBe("Polkadot");
    expect(await provider.send("chain_getBlockHash", [0])).toBe(GENESIS);
    expect(await provider.send("chain_getHeader", [])).toEqual(HEAD);
    const seen = upstreamSawSince(node, from);
    expect(rpcMethods(seen)).toEqual(["system_chain", "chain_getBlockHash", "chain_getHeader"]);
    for (const request of seen) expect(request.url).toBe("/");
  });

  it("ApiPromise.create initialises from the node and decorates the runtime", async () => {
    const from = node.requests.length;
    // HttpProvider's `ttl` getter is `number | null | undefined`, ProviderInterface's `number | null`, which
    // exactOptionalPropertyTypes does not accept; the provider is the one ApiPromise expects all the same
    const provider = new HttpProvider(sdkUrl(gw, "dot")) as NonNullable<ApiOptions["provider"]>;
    api = await ApiPromise.create({ provider, noInitWarn: true });
    expect(api.genesisHash.toHex()).toBe(GENESIS);
    expect(api.runtimeChain.toString()).toBe("Polkadot");
    expect(api.runtimeVersion.specName.toString()).toBe("polkadot");
    expect(api.runtimeVersion.specVersion.toNumber()).toBe(version.specVersion);
    expect(api.registry.chainSS58).toBe(0);
    expect(api.registry.chainDecimals).toEqual([10]);
    expect(api.registry.chainTokens).toEqual(["DOT"]);
    // a constant decoded from the metadata the node served
    expect(api.consts.balances?.existentialDeposit?.toString()).toBe("10000000000");
    const methods = rpcMethods(upstreamSawSince(node, from));
    expect(methods).toEqual(
      expect.arrayContaining([
        "rpc_methods",
        "chain_getBlockHash",
        "state_getRuntimeVersion",
        "system_chain",
        "system_properties",
        "state_call",
      ]),
    );
  });

  it("api.rpc calls go through: chain.getHeader and system.health", async () => {
    const from = node.requests.length;
    const header = await api.rpc.chain.getHeader();
    expect(header.number.toNumber()).toBe(0x1a2b3c4);
    expect(header.parentHash.toHex()).toBe(HEAD.parentHash);
    const health = await api.rpc.system.health();
    expect(health.peers.toNumber()).toBe(42);
    expect(health.isSyncing.isFalse).toBe(true);
    expect(rpcMethods(upstreamSawSince(node, from))).toEqual(["chain_getHeader", "system_health"]);
  });

  it("a method the registry denies is refused before the node: HttpProvider reports the HTTP 403", async () => {
    const from = node.requests.length;
    const provider = new HttpProvider(sdkUrl(gw, "dot"));
    // HttpProvider turns any non-2xx answer into `[status]: statusText` and drops the JSON-RPC body, so what
    // surfaces is the 403 that the gateway's METHOD_NOT_FOUND (-32601) answer carries.
    await expect(provider.send("author_rotateKeys", [])).rejects.toThrow(/^\[403\]: Forbidden/);
    expect(node.requests.length).toBe(from);
  });
});
