import { fileURLToPath } from "node:url";
import { loadRegistry } from "../../codegen/load.js";
import type { HeadSpec } from "../../codegen/registry-types.js";
import { matchRoute } from "../../src/registry/match-route.js";
import type { Endpoint, HeadCall, HttpMethod, Mount } from "../../src/registry/types.js";
import { substrateHash, substrateNumber } from "./chain-answers.js";
import { JSON_RPC_SOFTWARE, type NodeState } from "./node-software.js";

// Each interface family's typical call (its registry `head`), and how a real node of that interface answers
// it and its interface's `chain` call (each upstream's own documentation and code). The conformance
// suite derives every call from the registry; only the answers live here, keyed by the call as the registry
// writes it: a JSON-RPC method name, or "METHOD /path" for a REST route. The envelope around an answer is
// the node software's own (node-software.ts). A new interface whose head call is not below makes the suite
// fail for its labels until an entry is added.

export interface TypicalAnswer {
  /** The node's answer for the chain a loopback node serves: the JSON-RPC `result`, or the whole REST body. */
  readonly result: (state: NodeState, params?: unknown) => unknown;
  /**
   * What a node that answers without a head gives instead, in its software's success shape: a node at its
   * genesis, an empty block. `null` unless the software answers otherwise.
   */
  readonly noHead?: unknown;
  /** Whether the node no longer keeps the state the call's params name (a full node's pruned window). */
  readonly missing?: (state: NodeState, params?: unknown) => boolean;
}

const hex = (height: number): string => `0x${height.toString(16)}`;
const hash32 = (seed: number, fill = "ab"): string =>
  `0x${seed.toString(16).padStart(8, "0")}${fill.repeat(28)}`;

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/**
 * A Tezos block hash for a level: 51 base58 characters starting "BL" like Octez's (b58check of 32 bytes),
 * one of its own per level; level 0's is mainnet's genesis block hash.
 */
function tezosBlockHash(level: number): string {
  if (level === 0) return "BLockGenesisGenesisGenesisGenesisGenesisf79b5d1CoW2";
  let digits = "";
  for (let n = level; n > 0; n = Math.floor(n / 58)) digits = `${BASE58[n % 58]}${digits}`;
  return `BL${digits.padStart(10, "1")}qU3JkXfzEDYAkmmfX48gBDtYhMrpA98s7Aq4SzU`;
}

export const HEAD_ANSWERS: Readonly<Record<string, TypicalAnswer>> = {
  // EVM chains (geth, reth, avalanchego, bsc, frontier on Atleta, Zilliqa's EVM API) and java-tron /jsonrpc
  eth_blockNumber: { result: ({ height }) => hex(height) },
  // Substrate: the best header, or the header of the block whose hash is the param (null for a hash of no
  // block it has); its number a hex string
  chain_getHeader: {
    result: ({ height, chain }, params) => {
      const at = Array.isArray(params) ? params[0] : undefined;
      const number = at === undefined || at === null ? height : substrateNumber(chain, at);
      if (number === undefined || number > height) return null;
      return {
        parentHash: substrateHash(chain, Math.max(0, number - 1)),
        number: hex(number),
        stateRoot: hash32(number, "22"),
        extrinsicsRoot: hash32(number, "33"),
        digest: { logs: [] },
      };
    },
  },
  // nearcore
  status: {
    result: ({ height, chain }) => ({
      chain_id: chain,
      protocol_version: 73,
      latest_protocol_version: 73,
      rpc_addr: "0.0.0.0:3030",
      sync_info: {
        latest_block_hash: "5mzY6JkVd2zK8T9HxR3o4bM5fN7qW2eY1uP9aS3dF6gH",
        latest_block_height: height,
        latest_state_root: "9rq1nBvJ4Kc2Lx7Mz8Np3Qo5Rs6Tu7Vw8Xy9Za1Bc2De",
        latest_block_time: "2025-01-01T00:00:00.000000000Z",
        syncing: false,
        earliest_block_height: height - 43_200,
      },
      validators: [],
      version: { version: "2.4.0", build: "2.4.0", rustc_version: "1.82.0" },
    }),
  },
  // Stellar RPC
  getLatestLedger: {
    result: ({ height }) => ({ id: hash32(height, "cd").slice(2), protocolVersion: 22, sequence: height }),
  },
  // toncenter v2 (its `ok` member is the software's envelope); the zero state names the chain
  getMasterchainInfo: {
    result: ({ height, chain }) => ({
      "@type": "blocks.masterchainInfo",
      last: {
        "@type": "ton.blockIdExt",
        workchain: -1,
        shard: "-9223372036854775808",
        seqno: height,
        root_hash: "kVhVnWR0y4b7ZQ0m3Zq0Yb9q4k1P2Vv6w8G9Xx1Aa2E=",
        file_hash: "Yx3Wq2v0o8N7m6L5k4J3i2H1g0F9e8D7c6B5a4Z3y2A=",
      },
      state_root_hash: "Qm1Nb2Vc3Xz4La5Ks6Jd7Hf8Gg9Fh0Dj1Sk2Al3Pq4Y=",
      init: {
        "@type": "ton.blockIdExt",
        workchain: -1,
        shard: "-9223372036854775808",
        seqno: 0,
        root_hash: chain,
        file_hash: "XplPz01CXAps5qeSWUtxcyBfdAo5zVb1N979KLSKD24=",
      },
      "@extra": "1735689600.123456:0:0.5",
    }),
  },
  // Ogmios v6; a node at the chain's origin has no height yet
  "queryNetwork/blockHeight": { result: ({ height }) => height, noHead: "origin" },
  // Bitcoin Core, Dogecoin Core
  getblockcount: { result: ({ height }) => height },
  // Starknet (Pathfinder, Juno)
  starknet_blockNumber: { result: ({ height }) => height },
  // Nervos CKB
  get_tip_block_number: { result: ({ height }) => hex(height) },
  // Zilliqa native API: numbers as decimal strings
  GetLatestTxBlock: {
    result: ({ height }) => ({
      body: { BlockHash: hash32(height).slice(2), HeaderSign: "5A".repeat(64), MicroBlockInfos: [] },
      header: {
        BlockNum: String(height),
        DSBlockNum: String(Math.floor(height / 100)),
        GasLimit: "20000000",
        GasUsed: "0",
        MbInfoHash: hash32(height, "44").slice(2),
        MinerPubKey: `0x02${"7C".repeat(32)}`,
        NumMicroBlocks: 0,
        NumPages: 0,
        NumTxns: 0,
        PrevBlockHash: hash32(height - 1).slice(2),
        Rewards: "0",
        StateDeltaHash: "0".repeat(64),
        StateRootHash: hash32(height, "55").slice(2),
        Timestamp: "1735689600000000",
        TxnFees: "0",
        Version: 2,
      },
    }),
  },
  // Tezos Octez: each block its own hash (a block hash names one block), its predecessor the previous one's
  "GET /chains/main/blocks/head/header": {
    result: ({ height, chain }) => ({
      protocol: "PsQuebecnLByd3JwTiGadoG4nGWi3HYiLXUjkibeFV8dCFeVMUg",
      chain_id: chain,
      hash: tezosBlockHash(height),
      level: height,
      proto: 21,
      predecessor: tezosBlockHash(Math.max(0, height - 1)),
      timestamp: "2025-01-01T00:00:00Z",
      validation_pass: 4,
      operations_hash: "LLoZS2LW3rEi7KYU4ouBQtorua37aWWCtpDmv1n2x3xoKi6sVXLWp",
      fitness: ["02", "00a1b2c3", "", "ffffffff", "00000000"],
      context: "CoVPtbHTmRTYkWaFdBVTUSgt4kzzLZvKNVTfMShGMswTQRxdBaUP",
      payload_hash: "vh2SkkaBFx8q3M2yyYgbvUMx6WQdK9s7GZ9nYTYWnBF7Y1NQjHCM",
      payload_round: 0,
      proof_of_work_nonce: "e9f1c0d40e690000",
      liquidity_baking_toggle_vote: "pass",
      adaptive_issuance_vote: "pass",
      signature:
        "sigNRzmPEmYPfVq6mZUKEHgNwpSkS4gUcVwSJqSBKoX3oWZgkWbPhpJ6GiHz1N6ffQxS5BjPBZjHzKLCnH7Zk1mv7xsSdMv3",
    }),
  },
  // VeChain Thor: the block id starts with the block number
  "GET /blocks/best": {
    // Thor's answer for a block it does not have
    noHead: null,
    result: ({ height }) => ({
      number: height,
      id: hash32(height),
      size: 361,
      parentID: hash32(height - 1),
      timestamp: 1_735_689_600,
      gasLimit: 40_000_000,
      beneficiary: "0xb4094c25f86d628fdd571afc4077f0d0196afb48",
      gasUsed: 0,
      totalScore: height * 3,
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
  // NEM NIS1
  "GET /chain/height": { result: ({ height }) => ({ height }) },
  // Algorand algod v2
  "GET /v2/status": {
    result: ({ height }) => ({
      "catchup-time": 0,
      "last-catchpoint": "",
      "last-round": height,
      "last-version":
        "https://github.com/algorandfoundation/specs/tree/236dcc18c9c507d794813ab768e467ea42d1b4d9",
      "next-version":
        "https://github.com/algorandfoundation/specs/tree/236dcc18c9c507d794813ab768e467ea42d1b4d9",
      "next-version-round": height + 1,
      "next-version-supported": true,
      "stopped-at-unsupported-round": false,
      "time-since-last-round": 1_234_567_890,
    }),
  },
  // java-tron HTTP API
  "POST /wallet/getnowblock": {
    // java-tron's answer for a block it does not have
    noHead: {},
    result: ({ height }) => ({
      blockID: `${height.toString(16).padStart(16, "0")}${"9c".repeat(24)}`,
      block_header: {
        raw_data: {
          number: height,
          txTrieRoot: "0".repeat(64),
          witness_address: "41b487cdc02de90f15ac89a68c82f44cbfe3d915ea",
          parentHash: `${(height - 1).toString(16).padStart(16, "0")}${"9c".repeat(24)}`,
          version: 31,
          timestamp: 1_735_689_600_000,
        },
        witness_signature: "ab".repeat(65),
      },
    }),
  },
};

/** One typical call of a label: a head call and the mount that serves it. */
export interface TypicalCall {
  readonly head: HeadCall;
  /** The mount's interface ids, as the generated policy names them (`ethereum+zilliqa`). */
  readonly interfaces: string;
  readonly mountPath: string;
  /** The path after the key segment: what the caller writes and what the node must receive. */
  readonly path: string;
  /** The key of its answer in HEAD_ANSWERS. */
  readonly answerKey: string;
  /** `eth_blockNumber at /jsonrpc`, `POST /wallet/getnowblock`: for test names. */
  readonly name: string;
}

const REGISTRY = fileURLToPath(new URL("../../registry/networks.yaml", import.meta.url));
let interfaceHeads: Readonly<Record<string, { head: HeadSpec }>> | undefined;

/** A JSON-RPC method name, or "METHOD /path" for a route: the registry's own notation. */
export function answerKey(head: HeadCall): string {
  return head.kind === "jsonrpc" ? head.method : `${head.method} ${head.path}`;
}

/**
 * Every typical call of an endpoint: its own head call (the generated table's `head`, which carries a
 * network's override such as Zilliqa's), then the head call of every other interface it serves (TRON's REST
 * API next to its /jsonrpc mount, Zilliqa's EVM API next to its native one), each at the mount serving it.
 */
export function typicalCalls(endpoint: Endpoint): TypicalCall[] {
  const calls: TypicalCall[] = [];
  const add = (head: HeadCall, mount: Mount) => {
    const key = answerKey(head);
    if (calls.some((c) => c.mountPath === mount.path && c.answerKey === key)) return;
    const path =
      head.kind === "jsonrpc" ? mount.path : mount.path === "/" ? head.path : `${mount.path}${head.path}`;
    const name = head.kind === "jsonrpc" ? `${head.method} at ${path}` : `${head.method} ${path}`;
    calls.push({ head, interfaces: mount.policy.id, mountPath: mount.path, path, answerKey: key, name });
  };

  const own = endpoint.mounts.find((mount) => serves(mount, endpoint.head));
  if (own === undefined) {
    throw new Error(`label ${endpoint.label}: no mount serves its head call ${answerKey(endpoint.head)}`);
  }
  add(endpoint.head, own);
  for (const mount of endpoint.mounts) {
    for (const id of mount.policy.id.split("+")) {
      const head = interfaceHead(id);
      if (!serves(mount, head)) {
        throw new Error(`label ${endpoint.label}: mount ${mount.path} does not serve ${id}'s head call`);
      }
      add(head, mount);
    }
  }
  return calls;
}

function serves(mount: Mount, head: HeadCall): boolean {
  if (head.kind === "jsonrpc") return mount.policy.jsonrpc?.methods.get(head.method) === "shared";
  const routes = mount.policy.routes;
  if (routes === undefined) return false;
  const match = matchRoute(
    routes,
    head.method,
    head.path.split("/").filter((s) => s !== ""),
  );
  return match.kind === "match" && match.access === "shared";
}

/** An interface's own head call, read from the registry the generated tables were compiled from. */
function interfaceHead(id: string): HeadCall {
  interfaceHeads ??= loadRegistry(REGISTRY).spec.interfaces;
  const spec = interfaceHeads[id]?.head;
  if (spec === undefined) {
    throw new Error(`interface "${id}" is not in ${REGISTRY}: is generated/ stale? (npm run codegen:check)`);
  }
  const field = spec.field.split(".");
  if (spec.method !== undefined) {
    return {
      kind: "jsonrpc",
      method: spec.method,
      ...(spec.params === undefined ? {} : { params: spec.params }),
      field,
      encoding: spec.encoding,
    };
  }
  const [method, path] = (spec.route ?? "").split(" ");
  return {
    kind: "rest",
    method: method as HttpMethod,
    path: path ?? "/",
    ...(spec.body === undefined ? {} : { body: spec.body }),
    field,
    encoding: spec.encoding,
  };
}

/** The answer a node of this call's interface gives; a clear failure when the table has none. */
export function answerFor(call: TypicalCall, label: string): TypicalAnswer {
  const answer = HEAD_ANSWERS[call.answerKey];
  if (answer === undefined) {
    throw new Error(
      `label ${label}: its head call "${call.answerKey}" (interface ${call.interfaces}, mount ${call.mountPath}) ` +
        `has no typical answer. Add how a real node answers it to HEAD_ANSWERS in test/support/typical-calls.ts.`,
    );
  }
  return answer;
}

/** The request a caller sends for this call: method, path after the key, and body. */
export interface TypicalRequest {
  readonly method: HttpMethod;
  readonly path: string;
  readonly body?: string;
  /** The body as a value, for comparing with what the node received. */
  readonly sent?: unknown;
}

export function typicalRequest(call: TypicalCall, id: number): TypicalRequest {
  const { head } = call;
  if (head.kind === "jsonrpc") {
    const sent = {
      jsonrpc: "2.0",
      id,
      method: head.method,
      ...(head.params === undefined ? {} : { params: head.params }),
    };
    return { method: "POST", path: call.path, body: JSON.stringify(sent), sent };
  }
  if (head.body === undefined) return { method: head.method, path: call.path };
  return { method: head.method, path: call.path, body: JSON.stringify(head.body), sent: head.body };
}

/**
 * The whole answer a node of the call's interface sends for a chain in `state`, as JSON, in its software's
 * envelope (node-software.ts): what the caller must get back unchanged.
 */
export function expectedAnswer(
  call: TypicalCall,
  answer: TypicalAnswer,
  state: NodeState,
  id: number,
): unknown {
  if (call.head.kind === "rest") return answer.result(state);
  const interfaceId = call.interfaces.split("+")[0] as string;
  const software = JSON_RPC_SOFTWARE[interfaceId];
  if (software === undefined)
    throw new Error(
      `interface ${interfaceId} has no node software: add how its node frames answers and errors (its ` +
        `envelope) to JSON_RPC_SOFTWARE in test/support/node-software.ts`,
    );
  const sent = { id, jsonrpc: "2.0", method: call.head.method, params: call.head.params };
  return software.answer(sent, { result: answer.result(state, call.head.params) })?.json;
}

/** Where a node whose base URL carries `basePath` receives a call: the base path, then the caller's path. */
export function upstreamPath(basePath: string, path: string): string {
  if (basePath === "") return path;
  return path === "/" ? basePath : `${basePath}${path}`;
}

const HEX_QUANTITY = /^0x(0|[1-9a-fA-F][0-9a-fA-F]*)$/;
const DECIMAL_STRING = /^(0|[1-9][0-9]*)$/;

/** Reads the height from an answer along `head.field`, checking the registry's encoding; throws if either fails. */
export function readHeight(answer: unknown, head: HeadCall): number {
  let value = answer;
  for (const [depth, name] of head.field.entries()) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, name)) {
      throw new Error(
        `the answer has no "${head.field.slice(0, depth + 1).join(".")}": ${JSON.stringify(answer)}`,
      );
    }
    value = (value as Record<string, unknown>)[name];
  }
  const field = head.field.join(".");
  switch (head.encoding) {
    case "integer":
      if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) return value;
      break;
    case "hex-quantity":
      if (typeof value === "string" && HEX_QUANTITY.test(value)) return Number.parseInt(value.slice(2), 16);
      break;
    case "decimal-string":
      if (typeof value === "string" && DECIMAL_STRING.test(value)) return Number(value);
      break;
  }
  throw new Error(`"${field}" is ${JSON.stringify(value)}, not a height encoded as ${head.encoding}`);
}
