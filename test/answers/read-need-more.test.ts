import { describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { readNeed } from "../../src/answers/read-need.js";
import { restReadNeed } from "../../src/answers/rest-read-need.js";
import { DEFAULT_PLANS } from "../../src/config/defaults.js";
import type { PassedCall } from "../../src/jsonrpc/check.js";
import { checkMessage } from "../../src/jsonrpc/message.js";
import { PlanBook } from "../../src/plans/plan-terms.js";
import { matchRoute } from "../../src/registry/match-route.js";
import type { JsonRpcPolicy, Mount, RestReadRules, RouteNode } from "../../src/registry/types.js";

// Reads an audit found answering from the node's head without the registry saying so: across two nodes one
// block apart they alternated between the nodes' values (docs/upstreams.md, "Answers across nodes").

function mountOf(label: string, id: string): Mount {
  const mount = endpointsByLabel.get(label)?.mounts.find((m) => m.policy.id === id);
  if (mount === undefined) throw new Error(`${label} mounts no ${id}`);
  return mount;
}

function need(label: string, id: string, body: unknown) {
  const mount = mountOf(label, id);
  const dialect = mount.policy.jsonrpc as JsonRpcPolicy;
  const rules = {
    policy: dialect,
    plan: new PlanBook(DEFAULT_PLANS).terms("dedicated"),
    support: { email: "", dedicatedNodeUrl: "" },
    transport: "http" as const,
  };
  const { checked, batch } = checkMessage(JSON.stringify(body), rules, { maxBatch: 100, maxJsonDepth: 64 });
  const passed = checked.filter((c): c is PassedCall => c.ok);
  expect(passed.length, JSON.stringify(body)).toBe(checked.length);
  return readNeed(dialect.reads, mount.head, passed, !batch);
}

const call = (method: string, params: unknown, id: unknown = 1) => ({ jsonrpc: "2.0", id, method, params });

function restNeed(label: string, id: string, method: string, path: string) {
  const mount = mountOf(label, id);
  const segments = path.split("/").filter((s) => s !== "");
  const match = matchRoute(mount.policy.routes as RouteNode, method, segments);
  if (match.kind !== "match") throw new Error(`${method} ${path} matches no route`);
  return restReadNeed(mount.policy.restReads as RestReadRules, match.shape, segments);
}

const HASH = `0x${"ab".repeat(32)}`;
const ALICE = "15oF4uVJwmo4TdGW7VfQxNLavjCXviqxT9S1MgbjMNHr6Sp5";

describe("Substrate: a nonce, the sync state and the finalized heads are the node's at its head", () => {
  it("system_accountNextIndex (polkadot.js's nonce), system_syncState, the finalized heads, GRANDPA's round", () => {
    for (const [method, params] of [
      ["system_accountNextIndex", [ALICE]],
      ["account_nextIndex", [ALICE]],
      ["system_syncState", []],
      ["chain_getFinalizedHead", []],
      ["chain_getFinalisedHead", []],
      ["beefy_getFinalizedHead", []],
      ["grandpa_roundState", []],
      ["archive_v1_finalizedHeight", []],
    ] as const)
      expect(need("dot", "substrate", call(method, params))?.atHead, method).toBe(true);
    // the finalized heads go first to the node that named the highest finalized block
    for (const method of ["chain_getFinalizedHead", "chain_getFinalisedHead", "archive_v1_finalizedHeight"])
      expect(need("dot", "substrate", call(method, []))?.atFinalized, method).toBe(true);
    expect(need("dot", "substrate", call("system_syncState", []))?.atFinalized).toBe(false);
  });

  it("chain_getHead is chain_getBlockHash: a number is a block the node must have, none the head", () => {
    expect(need("dot", "substrate", call("chain_getHead", [123]))).toMatchObject({
      atHead: false,
      highestBlock: 123,
    });
    expect(need("dot", "substrate", call("chain_getHead", ["0x7b"]))?.highestBlock).toBe(123);
    expect(need("dot", "substrate", call("chain_getHead", []))?.atHead).toBe(true);
  });

  it("mmr_root and mmr_generateProof at a hash or, left out, at the head; a finality proof's block; archive_v1_*", () => {
    expect(need("dot", "substrate", call("mmr_root", []))?.atHead).toBe(true);
    expect(need("dot", "substrate", call("mmr_root", [HASH]))).toMatchObject({ atHead: false, byHash: true });
    expect(need("dot", "substrate", call("mmr_generateProof", [[1, 2]]))?.atHead).toBe(true);
    expect(need("dot", "substrate", call("mmr_generateProof", [[1, 2], null, HASH]))?.byHash).toBe(true);
    expect(need("dot", "substrate", call("grandpa_proveFinality", [500]))?.highestBlock).toBe(500);
    expect(need("dot", "substrate", call("archive_v1_hashByHeight", [77]))?.highestBlock).toBe(77);
    for (const method of ["archive_v1_header", "archive_v1_body"])
      expect(need("dot", "substrate", call(method, [HASH]))?.byHash, method).toBe(true);
    expect(need("dot", "substrate", call("archive_v1_call", [HASH, "Core_version", "0x"]))?.byHash).toBe(
      true,
    );
  });
});

describe("TRON's HTTP API: the newest blocks, the confirmed heads, a block range's end", () => {
  it("getblockbylatestnum and the solidity and PBFT getnowblock read at the node's head", () => {
    for (const path of [
      "/wallet/getblockbylatestnum",
      "/walletsolidity/getblockbylatestnum",
      "/walletpbft/getblockbylatestnum",
      "/walletsolidity/getnowblock",
      "/walletpbft/getnowblock",
    ])
      for (const method of ["GET", "POST"])
        expect(restNeed("trx", "tron-http", method, path)?.atHead, `${method} ${path}`).toBe(true);
  });
});

describe("algod, NIS1: a pending transaction by id, the last block", () => {
  it("algod's GET /v2/transactions/pending/{txid} reads at the head; the pool's list does not", () => {
    expect(restNeed("algo", "algod", "GET", `/v2/transactions/pending/${"A".repeat(52)}`)?.atHead).toBe(true);
    expect(restNeed("algo", "algod", "GET", "/v2/transactions/pending")).toBeUndefined();
  });

  it("NIS1's GET /chain/last-block, /chain/score and an account's state read at the head", () => {
    for (const path of ["/chain/last-block", "/chain/score", "/account/get", "/account/get/from-public-key"])
      expect(restNeed("nem", "nem-nis1", "GET", path)?.atHead, path).toBe(true);
  });
});

describe("Starknet, Stellar RPC, nearcore, CKB", () => {
  const L1_MESSAGE = {
    from_address: `0x${"11".repeat(20)}`,
    to_address: "0x1",
    entry_point_selector: "0x2",
    payload: [],
  };

  it("Starknet's estimateMessageFee and getStorageProof name a block_id, by place and by name", () => {
    expect(
      need("starknet", "starknet", call("starknet_estimateMessageFee", [L1_MESSAGE, "latest"]))?.atHead,
    ).toBe(true);
    expect(
      need("starknet", "starknet", call("starknet_estimateMessageFee", [L1_MESSAGE, { block_number: 900 }])),
    ).toMatchObject({ atHead: false, highestBlock: 900 });
    expect(
      need(
        "starknet",
        "starknet",
        call("starknet_estimateMessageFee", { message: L1_MESSAGE, block_id: { block_number: 901 } }),
      )?.highestBlock,
    ).toBe(901);
    expect(
      need("starknet", "starknet", call("starknet_getStorageProof", [{ block_number: 902 }, [], [], []]))
        ?.highestBlock,
    ).toBe(902);
    expect(
      need("starknet", "starknet", call("starknet_getStorageProof", { block_id: { block_hash: "0x1234" } }))
        ?.byHash,
    ).toBe(true);
    expect(
      need("starknet", "starknet", call("starknet_getStorageProof", { block_id: "latest" }))?.atHead,
    ).toBe(true);
  });

  it("starknet_syncing and an L1 message's status read at the head", () => {
    expect(need("starknet", "starknet", call("starknet_syncing", []))?.atHead).toBe(true);
    expect(need("starknet", "starknet", call("starknet_getMessagesStatus", [HASH]))?.atHead).toBe(true);
  });

  it("Stellar RPC's simulateTransaction runs on the node's latest ledger", () => {
    expect(need("xlm", "stellar-rpc", call("simulateTransaction", { transaction: "AAAA" }))?.atHead).toBe(
      true,
    );
  });

  it("nearcore's EXPERIMENTAL_receipt reads at the head, as tx does", () => {
    expect(
      need(
        "near",
        "near",
        call("EXPERIMENTAL_receipt", { receipt_id: "2EbembRPJhREPtmHCrGv3Xtdm3xoc5BMVYHm3b2kjvMY" }),
      )?.atHead,
    ).toBe(true);
  });

  it("CKB's indexer tip and what it indexed read at the head", () => {
    for (const method of [
      "get_indexer_tip",
      "get_cells_capacity",
      "get_cells",
      "get_transactions",
      "tx_pool_info",
    ])
      expect(need("ckb", "ckb", call(method, []))?.atHead, method).toBe(true);
  });
});
