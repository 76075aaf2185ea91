import type { Agent as HttpAgent } from "node:http";
import { TronWeb } from "tronweb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, restResponder, startLoopbackNode } from "../support/loopback-node.js";
import { sdkUrl, testHostHttpAgent, upstreamSawSince } from "./resolve.js";

// tronweb, unmodified, through the gateway to a loopback node answering like java-tron's HTTP API.
//
// Host resolution: tronweb's HttpProvider is an axios instance (node:http underneath) and exposes it as
// `provider.instance`; each provider's axios defaults get a node:http Agent with a lookup (`httpAgent`).

const ADDRESS = "TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7";
const ADDRESS_HEX = "4174472e7d35395a6b5add427eecb7f4b62ad2b071";

const NOW_BLOCK = {
  blockID: "00000000041eb1c0d1a4b0c3f5f8d3c2e6a9b8f7e6d5c4b3a29180706f5e4d3c",
  block_header: {
    raw_data: {
      number: 69_120_448,
      txTrieRoot: "6b1a9f3c0d2e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c",
      witness_address: "41d376d829440505ea13c9d1c455317d51b62e4ab6",
      parentHash: "00000000041eb1bf9a8b7c6d5e4f30211f2e3d4c5b6a79880716253443526170",
      version: 31,
      timestamp: 1_737_574_725_000,
    },
    witness_signature:
      "c4b1f1a8e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f001b",
  },
};

const ACCOUNT = {
  address: ADDRESS_HEX,
  balance: 1_524_371_888,
  create_time: 1_561_093_461_000,
  latest_opration_time: 1_737_401_916_000,
  free_net_usage: 268,
  latest_consume_free_time: 1_737_401_916_000,
  net_window_size: 28_800_000,
  net_window_optimized: true,
  account_resource: {
    latest_consume_time_for_energy: 1_737_401_916_000,
    energy_window_size: 28_800_000,
    energy_window_optimized: true,
  },
  owner_permission: {
    permission_name: "owner",
    threshold: 1,
    keys: [{ address: ADDRESS_HEX, weight: 1 }],
  },
  active_permission: [
    {
      type: "Active",
      id: 2,
      permission_name: "active",
      threshold: 1,
      operations: "7fff1fc0033ec30f000000000000000000000000000000000000000000000000",
      keys: [{ address: ADDRESS_HEX, weight: 1 }],
    },
  ],
  frozenV2: [{}, { type: "ENERGY" }, { type: "TRON_POWER" }],
  asset_optimized: true,
};
/** The solidified view lags the head: a different balance shows which endpoint answered. */
const SOLID_ACCOUNT = { ...ACCOUNT, balance: 1_500_000_000 };

/** What tronweb's `provider.instance` is underneath: an axios instance. */
interface AxiosLike {
  defaults: { httpAgent?: HttpAgent };
}

describe("tronweb through the gateway", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let agent: HttpAgent;
  let tronWeb: TronWeb;

  beforeAll(async () => {
    node = await startLoopbackNode(
      restResponder({
        "GET /wallet/getnowblock": NOW_BLOCK,
        "POST /wallet/getaccount": ACCOUNT,
        "POST /walletsolidity/getaccount": SOLID_ACCOUNT,
      }),
    );
    gw = await startGateway({ upstreams: { trx: [node.url] } });
    agent = testHostHttpAgent();
    tronWeb = new TronWeb({ fullHost: sdkUrl(gw, "trx") });
    for (const provider of [tronWeb.fullNode, tronWeb.solidityNode, tronWeb.eventServer]) {
      // `instance` is an axios instance; tronweb's type shows only its `request`
      if (provider !== undefined) (provider.instance as unknown as AxiosLike).defaults.httpAgent = agent;
    }
  });
  afterAll(async () => {
    agent?.destroy();
    await gw?.close();
    await node?.close();
  });

  it("trx.getCurrentBlock() reads /wallet/getnowblock", async () => {
    const from = node.requests.length;
    const block = await tronWeb.trx.getCurrentBlock();
    expect(block.blockID).toBe(NOW_BLOCK.blockID);
    expect(block.block_header.raw_data.number).toBe(69_120_448);
    expect(block.block_header.raw_data.witness_address).toBe(NOW_BLOCK.block_header.raw_data.witness_address);
    const seen = upstreamSawSince(node, from);
    // tronweb 6.5.1 asks for the head block with a GET (its HttpProvider's default method)
    expect(seen.map((r) => `${r.method} ${r.url}`)).toEqual(["GET /wallet/getnowblock"]);
  });

  it("trx.getBalance(address) reads /walletsolidity/getaccount", async () => {
    const from = node.requests.length;
    expect(await tronWeb.trx.getBalance(ADDRESS)).toBe(1_500_000_000);
    const seen = upstreamSawSince(node, from);
    expect(seen.map((r) => `${r.method} ${r.url}`)).toEqual(["POST /walletsolidity/getaccount"]);
    expect(JSON.parse(seen[0]?.body ?? "null")).toEqual({ address: ADDRESS_HEX });
  });

  it("trx.getUnconfirmedBalance(address) reads /wallet/getaccount", async () => {
    const from = node.requests.length;
    expect(await tronWeb.trx.getUnconfirmedBalance(ADDRESS)).toBe(1_524_371_888);
    const account = await tronWeb.trx.getUnconfirmedAccount(ADDRESS);
    expect(account.address).toBe(ADDRESS_HEX);
    expect(account.create_time).toBe(1_561_093_461_000);
    const seen = upstreamSawSince(node, from);
    expect(seen.map((r) => `${r.method} ${r.url}`)).toEqual([
      "POST /wallet/getaccount",
      "POST /wallet/getaccount",
    ]);
    expect(JSON.parse(seen[0]?.body ?? "null")).toEqual({ address: ADDRESS_HEX });
  });

  it("a dedicated-plan route is refused before the node with HTTP 403 (METHOD_NOT_ON_PLAN)", async () => {
    const from = node.requests.length;
    const error = await tronWeb.trx.listNodes().then(
      () => undefined,
      (e: unknown) => e,
    );
    const response = (error as { response?: { status: number; data: unknown } }).response;
    expect(response?.status).toBe(403);
    expect(response?.data).toMatchObject({ error: { code: "METHOD_NOT_ON_PLAN", status: 403 } });
    expect(node.requests.length).toBe(from);
  });
});
