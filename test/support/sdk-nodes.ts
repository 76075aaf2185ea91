import metadataKusama, {
  rpc as rpcKusama,
  version as versionKusama,
} from "@polkadot/types-support/metadata/static-kusama";
import metadataPolkadot, {
  rpc as rpcPolkadot,
  version as versionPolkadot,
} from "@polkadot/types-support/metadata/static-polkadot";
import { compactAddLength, hexToU8a, u8aToHex } from "@polkadot/util";
import { xdr } from "@stellar/stellar-sdk";
import type { UpstreamSpec } from "../../src/config/types.js";
import type { Endpoint, Mount } from "../../src/registry/types.js";
import { firstOf, type LoopbackNode, startLoopbackNode } from "./loopback-node.js";
import { jsonRpc2, jsonRpcServer, type Methods, restServer, type Software } from "./sdk-servers.js";

// Loopback nodes that answer the dashboard's first calls and SDK snippets as the node software behind each
// interface answers them: each server's own envelope (toncenter's `ok`, Ogmios' echoed `method`, Bitcoin
// Core's JSON-RPC 1.0 `error: null`), its own path (ton-http-api's /jsonRPC) and its own guard (bitcoind's
// basic auth, algod's API token), and the extra calls an SDK makes before its first (polkadot.js reads the
// runtime and its metadata). A call a node does not know gets that node's own "method not found", naming
// the method, so a new SDK call shows up as a failure that says what to add.

/** The chain head every node reports: a snippet prints it, and a first call's head field holds it. */
export const HEIGHT = 7_654_321;

const hex = (n: number): string => `0x${n.toString(16)}`;
const hash32 = (seed: number, fill: string): string =>
  `0x${seed.toString(16).padStart(8, "0")}${fill.repeat(28)}`;

/** What a gateway's config needs to reach a node: the URL (with a base path or credentials), headers. */
export interface NodeForMount {
  readonly node: LoopbackNode;
  readonly upstream: string | UpstreamSpec;
}

/**
 * A node of the mount's interfaces for `endpoint`'s chain: one server, even where it serves two interfaces
 * at one root (Zilliqa's EVM and native JSON-RPC), so their methods are one table.
 */
export async function startNodeFor(endpoint: Endpoint, mount: Mount): Promise<NodeForMount> {
  const software = mount.policy.id.split("+").map((id) => {
    const found = SOFTWARE[id];
    if (found === undefined) throw new Error(`no loopback node software for interface ${id}: add one here`);
    return found(endpoint);
  });
  const first = software[0] as Software;
  const rpc = first.rpc && {
    ...first.rpc,
    methods: Object.assign({}, ...software.map((s) => s.rpc?.methods ?? {})) as Methods,
  };
  const serve = firstOf(
    ...(rpc === undefined ? [] : [jsonRpcServer(rpc.path, rpc.methods, rpc.shape)]),
    ...software.flatMap((s) => (s.rest === undefined ? [] : [s.rest])),
  );
  const guard = first.guard;
  const node = await startLoopbackNode(guard === undefined ? serve : (r) => guard(r) ?? serve(r));
  const url = `${first.credentials === undefined ? node.url : node.url.replace("://", `://${first.credentials}@`)}${first.basePath ?? ""}`;
  return { node, upstream: first.headers === undefined ? url : { url, headers: first.headers } };
}

/** Bitcoin Core (v25-v27) and Dogecoin Core 1.14: JSON-RPC 1.0 answers, basic auth, 404 for an unknown method. */
function bitcoind(): Software {
  const credentials = "rpcuser:rpcpassword";
  const expected = `Basic ${Buffer.from(credentials).toString("base64")}`;
  return {
    credentials,
    guard: (request) =>
      request.headers.authorization === expected
        ? undefined
        : { status: 401, headers: { "www-authenticate": 'Basic realm="jsonrpc"' }, body: "" },
    rpc: {
      path: "/",
      methods: { getblockcount: () => HEIGHT },
      shape: {
        answer: (call, result) => ({ result, error: null, id: call.id }),
        refuse: (call, code, message) => ({
          status: code === -32601 ? 404 : 500,
          body: { result: null, error: { code, message }, id: call.id },
        }),
        batch: true,
      },
    },
  };
}

/** polkadot.js reads the runtime, its metadata (through state_call) and the chain's properties first. */
function substrate(endpoint: Endpoint): Software {
  const kusama = endpoint.code === "ksm";
  const [metadata, rpc, version] = kusama
    ? [metadataKusama, rpcKusama, versionKusama]
    : [metadataPolkadot, rpcPolkadot, versionPolkadot];
  const properties = kusama
    ? { ss58Format: 2, tokenDecimals: 12, tokenSymbol: "KSM" }
    : { ss58Format: 0, tokenDecimals: 10, tokenSymbol: "DOT" };
  const genesis = hash32(0, "91");
  return {
    rpc: jsonRpc2("/", {
      rpc_methods: () => rpc,
      chain_getBlockHash: (params) =>
        Array.isArray(params) && params[0] === 0 ? genesis : hash32(HEIGHT, "4d"),
      chain_getHeader: () => ({
        parentHash: hash32(HEIGHT - 1, "8f"),
        number: hex(HEIGHT),
        stateRoot: hash32(HEIGHT, "0b"),
        extrinsicsRoot: hash32(HEIGHT, "1c"),
        digest: { logs: [] },
      }),
      state_getRuntimeVersion: () => version,
      state_getMetadata: () => metadata,
      state_call: (params) => {
        const [method] = params as [string];
        // Vec<u32> [14]: the runtime offers metadata v14
        if (method === "Metadata_metadata_versions") return "0x040e000000";
        // Option<OpaqueMetadata>: Some, then the metadata bytes with their compact length
        if (method === "Metadata_metadata_at_version")
          return `0x01${u8aToHex(compactAddLength(hexToU8a(metadata)), -1, false)}`;
        throw new Error(`state_call ${method} is not answered here`);
      },
      system_chain: () => endpoint.networkName,
      system_properties: () => properties,
      system_health: () => ({ peers: 42, isSyncing: false, shouldHavePeers: true }),
    }),
  };
}

/**
 * Stellar RPC 23's getLatestLedger: the ledger's header and close meta as XDR beside its sequence, which
 * stellar-sdk 15 decodes (it throws without them). The meta is a v2 LedgerCloseMeta of an empty ledger.
 */
function stellarLatestLedger(): unknown {
  const hash = (fill: number) => Buffer.alloc(32, fill);
  const closeTime = "1737574725";
  const header = new xdr.LedgerHeader({
    ledgerVersion: 23,
    previousLedgerHash: hash(1),
    scpValue: new xdr.StellarValue({
      txSetHash: hash(2),
      closeTime: xdr.Uint64.fromString(closeTime),
      upgrades: [],
      ext: xdr.StellarValueExt.stellarValueBasic(),
    }),
    txSetResultHash: hash(3),
    bucketListHash: hash(4),
    ledgerSeq: HEIGHT,
    totalCoins: xdr.Int64.fromString("1054439020873472865"),
    feePool: xdr.Int64.fromString("52373281123"),
    inflationSeq: 0,
    idPool: xdr.Uint64.fromString("2367523321"),
    baseFee: 100,
    baseReserve: 5_000_000,
    maxTxSetSize: 1000,
    skipList: [hash(5), hash(6), hash(7), hash(8)],
    ext: new xdr.LedgerHeaderExt(0),
  });
  const meta = new xdr.LedgerCloseMeta(
    2,
    new xdr.LedgerCloseMetaV2({
      ext: new xdr.LedgerCloseMetaExt(0),
      ledgerHeader: new xdr.LedgerHeaderHistoryEntry({
        hash: hash(9),
        header,
        ext: new xdr.LedgerHeaderHistoryEntryExt(0),
      }),
      // the classic and the Soroban phase, both empty
      txSet: new xdr.GeneralizedTransactionSet(
        1,
        new xdr.TransactionSetV1({
          previousLedgerHash: hash(1),
          phases: [new xdr.TransactionPhase(0, []), new xdr.TransactionPhase(0, [])],
        }),
      ),
      txProcessing: [],
      upgradesProcessing: [],
      scpInfo: [],
      totalByteSizeOfLiveSorobanState: xdr.Uint64.fromString("0"),
      evictedKeys: [],
    }),
  );
  return {
    id: hash(9).toString("hex"),
    protocolVersion: 23,
    sequence: HEIGHT,
    closeTime,
    headerXdr: header.toXDR("base64"),
    metadataXdr: meta.toXDR("base64"),
  };
}

const NEAR_HASH = "8Q3y3bD6Fq2jQ3Xw7m5R9JdP4sV1aZ2kL6nH8cT5uE3G";

function nearcore(): Software {
  return {
    rpc: jsonRpc2("/", {
      status: () => ({
        chain_id: "mainnet",
        genesis_hash: "EPnLgE7iEq9s7yTkos96M3cWymH5avBAPm3qx3NXqR8H",
        protocol_version: 73,
        latest_protocol_version: 73,
        rpc_addr: "0.0.0.0:3030",
        sync_info: {
          latest_block_hash: NEAR_HASH,
          latest_block_height: HEIGHT,
          latest_state_root: "2cGq2Vx4bC7nM1sK5wJ8eR3tY6uI9oP2aS4dF7gH1jKl",
          latest_block_time: "2025-01-22T19:38:45.125114839Z",
          syncing: false,
          earliest_block_hash: "5Qpa4m2ZtS2aKqZ8WbJgD9yT3xY6r1nH7vC4eU8fL2kM",
          earliest_block_height: HEIGHT - 216_000,
          earliest_block_time: "2025-01-20T08:11:02.511290551Z",
        },
        validators: [],
        version: { build: "2.4.0", rustc_version: "1.82.0", version: "2.4.0" },
      }),
      block: () => ({
        author: "figment.poolv1.near",
        chunks: [],
        header: {
          height: HEIGHT,
          prev_height: HEIGHT - 1,
          hash: NEAR_HASH,
          prev_hash: "7bN2f5sQ3cV6xZ9mK1pL4rT8yH2uJ5wE3aD6gF9hK1jL",
          epoch_id: "4tVxZ5n1c8bE3Lk9WqR2mP6yH7sJ2dF5gA1uN8oT3iQe",
          next_epoch_id: "8mQ2wE5rT7yU1iO3pA6sD9fG2hJ4kL7zX1cV3bN5mQ8w",
          prev_state_root: "2cGq2Vx4bC7nM1sK5wJ8eR3tY6uI9oP2aS4dF7gH1jKl",
          timestamp: 1_737_574_725_125_115_000,
          timestamp_nanosec: "1737574725125115000",
          gas_price: "100000000",
          total_supply: "1201390585294627592385367219627537",
          last_final_block: "6nF4gH7jK1lZ3xC5vB8nM2qW4eR7tY9uI1oP3aS6dF8g",
          last_ds_final_block: "7bN2f5sQ3cV6xZ9mK1pL4rT8yH2uJ5wE3aD6gF9hK1jL",
          latest_protocol_version: 73,
          chunks_included: 6,
          validator_proposals: [],
          approvals: [],
          signature: "ed25519:5yU8iO1pA4sD7fG9hJ2kL5zX8cV1bN3mQ6wE9rT2yU5iO8pA1sD3fG6hJ9kL2zX",
        },
      }),
    }),
  };
}

/** ton-http-api: JSON-RPC at /jsonRPC, one call a request, `ok` beside the result, `@extra` inside it. */
function tonHttpApi(): Software {
  const block = (seqno: number, shard: string) => ({
    "@type": "ton.blockIdExt",
    workchain: -1,
    shard,
    seqno,
    root_hash: "kVhVnWR0y4b7ZQ0m3Zq0Yb9q4k1P2Vv6w8G9Xx1Aa2E=",
    file_hash: "Yx3Wq2v0o8N7m6L5k4J3i2H1g0F9e8D7c6B5a4Z3y2A=",
  });
  return {
    basePath: "/jsonRPC",
    rpc: {
      path: "/jsonRPC",
      methods: {
        getMasterchainInfo: () => ({
          "@type": "blocks.masterchainInfo",
          last: block(HEIGHT, "-9223372036854775808"),
          state_root_hash: "Qm1Nb2Vc3Xz4La5Ks6Jd7Hf8Gg9Fh0Dj1Sk2Al3Pq4Y=",
          init: block(0, "0"),
          "@extra": "1737574725.125115:0:0.5",
        }),
      },
      shape: {
        answer: (call, result) => ({ ok: true, result, jsonrpc: "2.0", id: call.id }),
        refuse: (call, code, message) => ({
          status: 200,
          body: { ok: false, error: message, code, jsonrpc: "2.0", id: call.id },
        }),
        batch: false,
      },
    },
  };
}

/** Ogmios v6: the method echoed in every answer; params an object, or none. */
function ogmios(): Software {
  return {
    rpc: {
      path: "/",
      methods: { "queryNetwork/blockHeight": () => HEIGHT },
      shape: {
        answer: (call, result) => ({ jsonrpc: "2.0", method: call.method, result, id: call.id }),
        refuse: (call, code, message) => ({
          status: 400,
          body: { jsonrpc: "2.0", method: call.method, error: { code, message }, id: call.id },
        }),
        batch: false,
        params: (params) => params === undefined || (typeof params === "object" && !Array.isArray(params)),
      },
    },
  };
}

const TEZOS_HEADER = {
  protocol: "PsQuebecnLByd3JwTiGadoG4nGWi3HYiLXUjkibeFV8dCFeVMUg",
  chain_id: "NetXdQprcVkpaWU",
  hash: "BLYpsNBA1dVt6sfQGrnjqBJmUCrFuXpyNFrTKzdAYgFrpqqz6jT",
  level: HEIGHT,
  proto: 22,
  predecessor: "BLVmhVmWLMTwVhRnz5XW5pjtYGs2Fh4dH4RJdvJ6fJwa5tU9J6J",
  timestamp: "2025-01-22T19:38:45Z",
  validation_pass: 4,
  operations_hash: "LLoaaN4sB4jk2u3kDn4q3XvfYcKbnmgFCH3nHdwqRJZ8sC8sE1xZH",
  fitness: ["02", "0074c8b1", "", "ffffffff", "00000000"],
  context: "CoVDyf9y9gHfAkPWofBJffo4X4bWjmehH2LeVonDcCKKzyQYwqdk",
  payload_hash: "vh2TyrWeZ2dydEy9ZjmvrjQvyCs5tdmxsjx3adt4x6BHd3Hh8s6H",
  payload_round: 0,
  proof_of_work_nonce: "7985fafe1fb70300",
  liquidity_baking_toggle_vote: "pass",
  adaptive_issuance_vote: "pass",
  signature:
    "sigNfcT2AHzrNqWt2TWaoo7WhgNMQ5zcjPbyodnYeovMTU38uJXVjAB1r6gpYwx3KaJuTWnqxs8Ez1pfo7QRzqK7rqmVnpG6",
};

const ALGOD_TOKEN = "a".repeat(64);
const ALGOD_CONSENSUS =
  "https://github.com/algorandfoundation/specs/tree/236dcc18c9c507d794813ab768e467ea42d1b4d9";

/** algod: every route but a few needs X-Algo-API-Token, which the operator puts in the upstream entry. */
function algod(): Software {
  const rest = restServer(
    {
      "GET /v2/status": () => ({
        catchpoint: "",
        "catchup-time": 0,
        "last-catchpoint": "",
        "last-round": HEIGHT,
        "last-version": ALGOD_CONSENSUS,
        "next-version": ALGOD_CONSENSUS,
        "next-version-round": HEIGHT + 1,
        "next-version-supported": true,
        "stopped-at-unsupported-round": false,
        "time-since-last-round": 1_873_411_210,
      }),
    },
    { message: "Not Found" },
  );
  return {
    headers: { "X-Algo-API-Token": ALGOD_TOKEN },
    guard: (request) =>
      request.headers["x-algo-api-token"] === ALGOD_TOKEN
        ? undefined
        : { status: 401, body: { message: "Invalid API Token" } },
    rest,
  };
}

const TRON_BLOCK = {
  blockID: `${HEIGHT.toString(16).padStart(16, "0")}d1a4b0c3f5f8d3c2e6a9b8f7e6d5c4b3a29180706f5e4d3c`,
  block_header: {
    raw_data: {
      number: HEIGHT,
      txTrieRoot: "6b1a9f3c0d2e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c",
      witness_address: "41d376d829440505ea13c9d1c455317d51b62e4ab6",
      parentHash: `${(HEIGHT - 1).toString(16).padStart(16, "0")}9a8b7c6d5e4f30211f2e3d4c5b6a79880716253443526170`,
      version: 31,
      timestamp: 1_737_574_725_000,
    },
    witness_signature:
      "c4b1f1a8e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f001b",
  },
};

/** Node software by registry interface id, for a label of `endpoint`'s chain. */
const SOFTWARE: Record<string, (endpoint: Endpoint) => Software> = {
  ethereum: (endpoint) => ({
    rpc: jsonRpc2("/", {
      eth_blockNumber: () => hex(HEIGHT),
      eth_chainId: () => hex(endpoint.chainId ?? 1),
      net_version: () => String(endpoint.chainId ?? 1),
    }),
  }),
  "tron-jsonrpc": (endpoint) => ({
    rpc: jsonRpc2("/jsonrpc", {
      eth_blockNumber: () => hex(HEIGHT),
      eth_chainId: () => hex(endpoint.chainId ?? 0),
    }),
  }),
  zilliqa: () => ({
    rpc: jsonRpc2("/", {
      // numbers as decimal strings, as the native API writes them
      GetLatestTxBlock: () => ({
        body: { BlockHash: hash32(HEIGHT, "b1").slice(2), HeaderSign: "5A".repeat(64), MicroBlockInfos: [] },
        header: {
          BlockNum: String(HEIGHT),
          DSBlockNum: String(Math.floor(HEIGHT / 100)),
          GasLimit: "20000000",
          GasUsed: "0",
          MbInfoHash: hash32(HEIGHT, "44").slice(2),
          MinerPubKey: `0x02${"7C".repeat(32)}`,
          NumMicroBlocks: 0,
          NumPages: 0,
          NumTxns: 0,
          PrevBlockHash: hash32(HEIGHT - 1, "b1").slice(2),
          Rewards: "0",
          StateDeltaHash: "0".repeat(64),
          StateRootHash: hash32(HEIGHT, "55").slice(2),
          Timestamp: "1737574725000000",
          TxnFees: "0",
          Version: 2,
        },
      }),
    }),
  }),
  substrate,
  near: nearcore,
  "stellar-rpc": () => ({ rpc: jsonRpc2("/", { getLatestLedger: stellarLatestLedger }) }),
  toncenter: tonHttpApi,
  ogmios,
  "bitcoin-core": bitcoind,
  "dogecoin-core": bitcoind,
  starknet: () => ({
    rpc: jsonRpc2("/", {
      starknet_blockNumber: () => HEIGHT,
      starknet_specVersion: () => "0.7.1",
      starknet_chainId: () => "0x534e5f4d41494e",
    }),
  }),
  ckb: () => ({ rpc: jsonRpc2("/", { get_tip_block_number: () => hex(HEIGHT) }) }),
  tezos: () => ({
    rest: restServer({ "GET /chains/main/blocks/head/header": () => TEZOS_HEADER }, []),
  }),
  "vechain-thor": () => ({
    rest: restServer(
      {
        "GET /blocks/best": () => ({
          number: HEIGHT,
          id: hash32(HEIGHT, "e7"),
          size: 361,
          parentID: hash32(HEIGHT - 1, "e7"),
          timestamp: 1_737_574_720,
          gasLimit: 40_000_000,
          beneficiary: "0xb4094c25f86d628fdd571afc4077f0d0196afb48",
          gasUsed: 0,
          totalScore: HEIGHT * 3,
          txsRoot: `0x${"45".repeat(32)}`,
          txsFeatures: 1,
          stateRoot: `0x${"67".repeat(32)}`,
          receiptsRoot: `0x${"89".repeat(32)}`,
          com: true,
          signer: "0x5b0e4d2c4f0ab4b9a2b84e7e0ce4c6e4e9d8b6a1",
          isTrunk: true,
          isFinalized: false,
          transactions: [],
        }),
      },
      "404 page not found",
    ),
  }),
  "nem-nis1": () => ({
    rest: restServer(
      { "GET /chain/height": () => ({ height: HEIGHT }) },
      { timeStamp: 0, error: "Not Found", message: "invalid request", status: 404 },
    ),
  }),
  algod,
  // java-tron's servlets answer GET and POST alike; an unknown path is Jetty's 404
  "tron-http": () => ({
    rest: restServer(
      { "GET /wallet/getnowblock": () => TRON_BLOCK, "POST /wallet/getnowblock": () => TRON_BLOCK },
      "",
    ),
  }),
};
