import metadataKusama, {
  rpc as rpcKusama,
  version as versionKusama,
} from "@polkadot/types-support/metadata/static-kusama";
import metadataPolkadot, {
  rpc as rpcPolkadot,
  version as versionPolkadot,
} from "@polkadot/types-support/metadata/static-polkadot";
import { compactAddLength, hexToU8a, u8aToHex } from "@polkadot/util";
import type { UpstreamSpec } from "../../src/config/types.js";
import type { Endpoint, Mount } from "../../src/registry/types.js";
import { type LoopbackNode, startLoopbackNode } from "./loopback-node.js";
import type { Guard } from "./node-guards.js";
import { JSON_RPC_SOFTWARE, NodeRejection, type NodeState, REST_SOFTWARE } from "./node-software.js";
import { stellarLatestLedger } from "./sdk-stellar-ledger.js";
import { nodeState, softwareNode } from "./software-node.js";
import type { TypicalAnswer } from "./typical-calls.js";

// Loopback nodes for the dashboard's first calls and SDK snippets: the same emulation of each interface's
// node software as every other suite's (software-node.ts, node-software.ts), with its own path (ton-http-
// api's /jsonRPC) and its credential (bitcoind's rpcpassword, algod's API token) on, plus what an SDK asks
// before or beside the head call (polkadot.js reads the runtime and its metadata, near-api-js a block).
// A call a node does not know gets its software's own "method not found" (geth's and nearcore's name the
// method), so a new SDK call shows up as a failing snippet: add how the software answers it to SDK_CALLS.

/** The chain head every node reports: a snippet prints it, and a first call's head field holds it. */
export const HEIGHT = 7_654_321;

/** What a gateway's config needs to reach a node: the URL (with a base path or credentials), headers. */
export interface NodeForMount {
  readonly node: LoopbackNode;
  readonly upstream: string | UpstreamSpec;
}

/**
 * A node of the mount's interfaces for `endpoint`'s chain at HEIGHT: one server, even where it serves two
 * interfaces at one root (Zilliqa's EVM and native JSON-RPC).
 */
export async function startNodeFor(
  endpoint: Endpoint,
  mount: Mount,
  state: NodeState = nodeState(endpoint, HEIGHT),
  more: Readonly<Record<string, TypicalAnswer>> = {},
): Promise<NodeForMount> {
  const ids = mount.policy.id.split("+");
  const id = ids[0] as string;
  const rpc = JSON_RPC_SOFTWARE[id];
  const software = rpc ?? REST_SOFTWARE[id];
  if (software === undefined)
    throw new Error(`no node software for interface ${id}: add it to node-software.ts`);
  const basePath = rpc?.path ?? "";
  const answers: Record<string, TypicalAnswer> = Object.assign(
    {},
    ...ids.map((each) => SDK_CALLS[each]?.(endpoint) ?? {}),
    more,
  );
  const serve = softwareNode({ ...endpoint, mounts: [mount] }, () => state, [basePath], {
    answers,
    guarded: true,
  });
  const node = await startLoopbackNode(serve);
  return { node, upstream: upstreamWith(`${node.url}${basePath}`, software.guard) };
}

/** The upstream entry an operator writes for a node that demands `guard`'s credential. */
function upstreamWith(url: string, guard: Guard | undefined): string | UpstreamSpec {
  const credential = guard?.credential;
  if (credential === undefined) return url;
  if ("basicAuth" in credential) return url.replace("://", `://${credential.basicAuth}@`);
  return { url, headers: { [credential.header]: credential.value } };
}

/**
 * polkadot.js reads the runtime, its metadata (through state_call) and the chain's properties first; the
 * genesis hash and the head come from the shared answers (chain_getBlockHash, chain_getHeader).
 */
function polkadotJsCalls(endpoint: Endpoint): Record<string, TypicalAnswer> {
  const kusama = endpoint.code === "ksm";
  const [metadata, rpc, version] = kusama
    ? [metadataKusama, rpcKusama, versionKusama]
    : [metadataPolkadot, rpcPolkadot, versionPolkadot];
  const properties = kusama
    ? { ss58Format: 2, tokenDecimals: 12, tokenSymbol: "KSM" }
    : { ss58Format: 0, tokenDecimals: 10, tokenSymbol: "DOT" };
  return {
    rpc_methods: { result: () => rpc },
    state_getRuntimeVersion: { result: () => version },
    state_getMetadata: { result: () => metadata },
    state_call: {
      result: (_state, params) => {
        const [method] = params as [string];
        // Vec<u32> [14]: the runtime offers metadata v14
        if (method === "Metadata_metadata_versions") return "0x040e000000";
        // Option<OpaqueMetadata>: Some, then the metadata bytes with their compact length
        if (method === "Metadata_metadata_at_version")
          return `0x01${u8aToHex(compactAddLength(hexToU8a(metadata)), -1, false)}`;
        throw new Error(`state_call ${method} is not answered here`);
      },
    },
    system_chain: { result: () => endpoint.networkName },
    system_properties: { result: () => properties },
    system_health: { result: () => ({ peers: 42, isSyncing: false, shouldHavePeers: true }) },
  };
}

/**
 * How far behind the head nearcore's `final` block is: Doomslug finality is typically 2 blocks behind
 * (header.last_final_block), its doomslug-final (`near-final`) 1 behind (header.last_ds_final_block).
 */
export const NEAR_FINAL_LAG = 2;
const NEAR_DS_FINAL_LAG = 1;

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
/** The 32 bytes of a block hash here: a marker byte, the height, then a filler. */
const NEAR_HASH_FILL = "5a".repeat(23);

/** Block `height`'s hash, base58 as nearcore writes a CryptoHash: one of its own per height. */
export function nearBlockHash(height: number): string {
  let n = BigInt(`0x4c${height.toString(16).padStart(16, "0")}${NEAR_HASH_FILL}`);
  let text = "";
  while (n > 0n) {
    text = `${BASE58[Number(n % 58n)]}${text}`;
    n /= 58n;
  }
  return text;
}

/** The height whose hash (nearBlockHash) `hash` is, or undefined for no block of this node's. */
function nearHeightOf(hash: string): number | undefined {
  let n = 0n;
  for (const c of hash) {
    const digit = BASE58.indexOf(c);
    if (digit < 0) return undefined;
    n = n * 58n + BigInt(digit);
  }
  const hex = n.toString(16);
  if (hex.length !== 64 || !hex.startsWith("4c") || !hex.endsWith(NEAR_HASH_FILL)) return undefined;
  return Number.parseInt(hex.slice(2, 18), 16);
}

/**
 * nearcore's UNKNOWN_BLOCK handler error (chain/jsonrpc-primitives types/blocks.rs RpcBlockError), as
 * by-hash-unknown.test.ts has it for a hash: a handler error at HTTP 200.
 */
function unknownNearBlock(blockId: number | string): NodeRejection {
  const what =
    typeof blockId === "number" ? `BLOCK HEIGHT: ${blockId} \n Cause: Unknown` : `BLOCK: ${blockId}`;
  return new NodeRejection(-32000, "Server error", {
    name: "HANDLER_ERROR",
    cause: { info: { block_reference: { block_id: blockId } }, name: "UNKNOWN_BLOCK" },
    code: -32000,
    message: "Server error",
    data: `DB Not Found Error: ${what}`,
  });
}

/**
 * nearcore's `block` for near-api-js' viewBlock: the block the params name (chain/jsonrpc-primitives
 * types/blocks.rs RpcBlockRequest, a BlockReference): `block_id` a height or a hash, `finality` "optimistic"
 * (the head), "near-final" or "final" (behind it), or legacy positional `[block_id]`; its header, no chunks.
 * A height above the head or a hash of no block is UNKNOWN_BLOCK.
 */
function nearBlock({ height: head }: { height: number }, params?: unknown): unknown {
  const reference = (Array.isArray(params) ? { block_id: params[0] } : (params ?? {})) as {
    block_id?: unknown;
    finality?: unknown;
  };
  let height = head;
  if (typeof reference.block_id === "number") {
    if (reference.block_id > head || reference.block_id < 0) throw unknownNearBlock(reference.block_id);
    height = reference.block_id;
  } else if (typeof reference.block_id === "string") {
    const at = nearHeightOf(reference.block_id);
    if (at === undefined || at > head) throw unknownNearBlock(reference.block_id);
    height = at;
  } else if (reference.finality === "final") {
    height = head - NEAR_FINAL_LAG;
  } else if (reference.finality === "near-final") {
    height = head - NEAR_DS_FINAL_LAG;
  }
  return {
    author: "figment.poolv1.near",
    chunks: [],
    header: {
      height,
      prev_height: height - 1,
      hash: nearBlockHash(height),
      prev_hash: nearBlockHash(height - 1),
      epoch_id: "4tVxZ5n1c8bE3Lk9WqR2mP6yH7sJ2dF5gA1uN8oT3iQe",
      next_epoch_id: "8mQ2wE5rT7yU1iO3pA6sD9fG2hJ4kL7zX1cV3bN5mQ8w",
      prev_state_root: "2cGq2Vx4bC7nM1sK5wJ8eR3tY6uI9oP2aS4dF7gH1jKl",
      timestamp: 1_737_574_725_125_115_000,
      timestamp_nanosec: "1737574725125115000",
      gas_price: "100000000",
      total_supply: "1201390585294627592385367219627537",
      last_final_block: nearBlockHash(height - NEAR_FINAL_LAG),
      last_ds_final_block: nearBlockHash(height - NEAR_DS_FINAL_LAG),
      latest_protocol_version: 73,
      chunks_included: 6,
      validator_proposals: [],
      approvals: [],
      signature: "ed25519:5yU8iO1pA4sD7fG9hJ2kL5zX8cV1bN3mQ6wE9rT2yU5iO8pA1sD3fG6hJ9kL2zX",
    },
  };
}

/**
 * What each interface's SDK asks beyond the head and chain calls, as its node software answers it, by
 * registry interface id. An entry here wins over the shared answer of the same call (Stellar's ledger XDR).
 */
const SDK_CALLS: Readonly<Record<string, (endpoint: Endpoint) => Record<string, TypicalAnswer>>> = {
  substrate: polkadotJsCalls,
  near: () => ({ block: { result: nearBlock } }),
  "stellar-rpc": () => ({ getLatestLedger: { result: ({ height }) => stellarLatestLedger(height) } }),
  // starknet.js asks the spec version before its first call
  starknet: () => ({ starknet_specVersion: { result: () => "0.7.1" } }),
};
