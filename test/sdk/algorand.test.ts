import { Algodv2 } from "algosdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, restResponder, startLoopbackNode } from "../support/loopback-node.js";
import { sdkUrl, upstreamSawSince, useTestHostsForGlobalFetch } from "./resolve.js";

// algosdk's Algodv2 client, unmodified, through the gateway to a loopback node answering like algod (go-algorand
// v3 REST API, JSON as algod writes it).
//
// Host resolution: algosdk's default URLTokenBaseHTTPClient calls global fetch, so an undici Agent with a
// lookup is installed as the global dispatcher for this file and restored afterwards.

const CONSENSUS = "https://github.com/algorandfoundation/specs/tree/236dcc18c9c507d794813ab768e467ea42d1b4d9";
const GENESIS_HASH = "wGHE2Pwdvd7S12BL5FaOP20EGYesN73ktiC1qzkkit8=";
const LAST_ROUND = 46_123_456;
const ADDRESS = "BMYFK6U7YTUQ4M2YPWRMP3ARGZNYBJOK54KDSXUDVDG7EFZ4MGDOOTKZLM";

const STATUS = {
  catchpoint: "",
  "catchpoint-acquired-blocks": 0,
  "catchpoint-processed-accounts": 0,
  "catchpoint-processed-kvs": 0,
  "catchpoint-total-accounts": 0,
  "catchpoint-total-blocks": 0,
  "catchpoint-total-kvs": 0,
  "catchpoint-verified-accounts": 0,
  "catchpoint-verified-kvs": 0,
  "catchup-time": 0,
  "last-catchpoint": "",
  "last-round": LAST_ROUND,
  "last-version": CONSENSUS,
  "next-version": CONSENSUS,
  "next-version-round": LAST_ROUND + 1,
  "next-version-supported": true,
  "stopped-at-unsupported-round": false,
  "time-since-last-round": 1_873_411_210,
};

const PARAMS = {
  "consensus-version": CONSENSUS,
  fee: 0,
  "genesis-hash": GENESIS_HASH,
  "genesis-id": "mainnet-v1.0",
  "last-round": LAST_ROUND,
  "min-fee": 1000,
};

const ACCOUNT = {
  address: ADDRESS,
  amount: 12_345_678_901,
  "amount-without-pending-rewards": 12_345_678_901,
  "apps-total-schema": { "num-byte-slice": 0, "num-uint": 0 },
  assets: [{ amount: 250_000_000, "asset-id": 31_566_704, "is-frozen": false }],
  "created-apps": [],
  "created-assets": [],
  "min-balance": 200_000,
  "pending-rewards": 0,
  "reward-base": 218_288,
  rewards: 0,
  round: LAST_ROUND,
  status: "Offline",
  "total-apps-opted-in": 0,
  "total-assets-opted-in": 1,
  "total-box-bytes": 0,
  "total-boxes": 0,
  "total-created-apps": 0,
  "total-created-assets": 0,
};

describe("algosdk Algodv2 through the gateway", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restoreFetch: () => Promise<void>;
  let algod: Algodv2;

  beforeAll(async () => {
    restoreFetch = useTestHostsForGlobalFetch();
    node = await startLoopbackNode(
      restResponder({
        "GET /v2/status": STATUS,
        "GET /v2/transactions/params": PARAMS,
        [`GET /v2/accounts/${ADDRESS}`]: ACCOUNT,
      }),
    );
    gw = await startGateway({ upstreams: { algo: [node.url] } });
    // No algod token: the gateway key in the path is the credential. The port is passed on its own, as
    // algosdk would otherwise put its default (4180) in place of the one in the URL.
    const url = new URL(sdkUrl(gw, "algo"));
    algod = new Algodv2("", `${url.protocol}//${url.hostname}${url.pathname}`, gw.port);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    await restoreFetch?.();
  });

  it("status()", async () => {
    const from = node.requests.length;
    const status = await algod.status().do();
    expect(status.lastRound).toBe(BigInt(LAST_ROUND));
    expect(status.lastVersion).toBe(CONSENSUS);
    expect(status.nextVersionSupported).toBe(true);
    expect(status.catchupTime).toBe(0n);
    const seen = upstreamSawSince(node, from);
    expect(seen.map((r) => `${r.method} ${r.url}`)).toEqual(["GET /v2/status"]);
  });

  it("getTransactionParams()", async () => {
    const from = node.requests.length;
    const params = await algod.getTransactionParams().do();
    expect(params.genesisID).toBe("mainnet-v1.0");
    expect(Buffer.from(params.genesisHash ?? new Uint8Array()).toString("base64")).toBe(GENESIS_HASH);
    expect(params.minFee).toBe(1000n);
    expect(params.firstValid).toBe(BigInt(LAST_ROUND));
    expect(params.lastValid).toBe(BigInt(LAST_ROUND + 1000));
    const seen = upstreamSawSince(node, from);
    expect(seen.map((r) => `${r.method} ${r.url}`)).toEqual(["GET /v2/transactions/params"]);
  });

  it("accountInformation()", async () => {
    const from = node.requests.length;
    const account = await algod.accountInformation(ADDRESS).do();
    expect(account.address.toString()).toBe(ADDRESS);
    expect(account.amount).toBe(12_345_678_901n);
    expect(account.minBalance).toBe(200_000n);
    expect(account.status).toBe("Offline");
    expect(account.assets?.[0]?.assetId).toBe(31_566_704n);
    expect(account.assets?.[0]?.amount).toBe(250_000_000n);
    const seen = upstreamSawSince(node, from);
    expect(seen.map((r) => `${r.method} ${r.url.split("?")[0]}`)).toEqual([`GET /v2/accounts/${ADDRESS}`]);
  });

  it("a route the registry denies is refused before the node: the client error carries the 404", async () => {
    const from = node.requests.length;
    const error = await algod
      .getSyncRound()
      .do()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    const response = (error as { response?: { status: number; body: Uint8Array } }).response;
    // GET /v2/ledger/sync is on the registry's deny list; a REST network answers any route it does not
    // relay with NOT_FOUND
    expect(response?.status).toBe(404);
    expect(JSON.parse(Buffer.from(response?.body ?? new Uint8Array()).toString("utf8"))).toEqual({
      // algod's own errors' text, where algosdk reads it (registry errorMessage)
      message: "No such route on this network (NOT_FOUND)",
      error: {
        code: "NOT_FOUND",
        status: 404,
        requestId: expect.any(String),
        message: "No such route on this network",
      },
    });
    expect(node.requests.length).toBe(from);
  });
});
