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
import {
  JSON_RPC_SOFTWARE,
  NodeRejection,
  type NodeState,
  nearBlockHash,
  nearHeightOf,
  nearUnknownBlock,
  REST_SOFTWARE,
} from "./node-software.js";
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

export { nearBlockHash };

/**
 * How many blocks back a non-archival nearcore node keeps: GCConfig's gc_num_epochs_to_keep, 5 epochs of
 * 43 200 blocks (the registry's `fullHistory` for NEAR). An older block is garbage-collected.
 */
export const NEAR_KEPT_BLOCKS = 5 * 43_200;

/** nearcore's answer for a block it has no record of at all: one above its head, a hash it never saw. */
function unknownNearBlock(blockId: number | string): NodeRejection {
  const notFound = typeof blockId === "number" ? `BLOCK HEIGHT: ${blockId}` : `BLOCK: ${blockId}`;
  return new NodeRejection(-32000, "Server error", nearUnknownBlock(notFound));
}

/** nearcore's answer for a block it garbage-collected (node-software.ts nearUnknownBlock): its body is gone. */
function collectedNearBlock(height: number): NodeRejection {
  return new NodeRejection(-32000, "Server error", nearUnknownBlock(`BLOCK: ${nearBlockHash(height)}`));
}

/** How far back a nearcore node keeps blocks: "archive" keeps all, a number that many below its head. */
export type NearKeeps = number | "archive";

/**
 * The height a BlockReference names on a node at `head`, or the rejection nearcore gives it: a height above
 * the head or a hash of no block is UNKNOWN_BLOCK ("BLOCK HEIGHT: n" / "BLOCK: hash"), and so is a block
 * older than a non-archival node keeps (garbage-collected: "BLOCK: <its hash>").
 */
function nearHeightAt(
  head: number,
  keeps: NearKeeps,
  reference: { block_id?: unknown; finality?: unknown },
): number {
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
  if (keeps !== "archive" && height < head - keeps) throw collectedNearBlock(height);
  return height;
}

/**
 * nearcore's `block` for near-api-js' viewBlock: the block the params name (chain/jsonrpc-primitives
 * types/blocks.rs RpcBlockRequest, a BlockReference): `block_id` a height or a hash, `finality` "optimistic"
 * (the head), "near-final" or "final" (behind it), or legacy positional `[block_id]`; its header, no chunks.
 * A height above the head or a hash of no block is UNKNOWN_BLOCK, and so is a block older than a
 * non-archival node keeps (`keeps` blocks below its head).
 */
function nearBlock(keeps: NearKeeps, { height: head }: { height: number }, params?: unknown): unknown {
  const reference = (Array.isArray(params) ? { block_id: params[0] } : (params ?? {})) as {
    block_id?: unknown;
    finality?: unknown;
  };
  const height = nearHeightAt(head, keeps, reference);
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

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const CHUNK_HASH_FILL = "c3".repeat(22);

/** The chunk hash of shard `shard` at `height` here: 32 bytes, a marker (0x43), the shard, the height, a filler. */
export function nearChunkHash(height: number, shard: number): string {
  let n = BigInt(
    `0x43${shard.toString(16).padStart(2, "0")}${height.toString(16).padStart(16, "0")}${CHUNK_HASH_FILL}`,
  );
  let text = "";
  while (n > 0n) {
    text = `${BASE58[Number(n % 58n)]}${text}`;
    n /= 58n;
  }
  return text;
}

/** The height and shard whose chunk hash (nearChunkHash) `hash` is, or undefined for no chunk of this node's. */
function nearChunkOf(hash: string): { height: number; shard: number } | undefined {
  let n = 0n;
  for (const c of hash) {
    const digit = BASE58.indexOf(c);
    if (digit < 0) return undefined;
    n = n * 58n + BigInt(digit);
  }
  const hex = n.toString(16);
  if (hex.length !== 64 || !hex.startsWith("43") || !hex.endsWith(CHUNK_HASH_FILL)) return undefined;
  return { shard: Number.parseInt(hex.slice(2, 4), 16), height: Number.parseInt(hex.slice(4, 20), 16) };
}

/**
 * nearcore's `chunk` (chain/jsonrpc-primitives types/chunks.rs RpcChunkRequest, a ChunkReference): the
 * chunk of `shard_id` in the block `block_id` names (a height or a hash), or the one `chunk_id` names; the
 * legacy positional forms `[[block_id, shard_id]]` and `[chunk_id]`. A block it has no body for (above
 * the head, unknown, or garbage-collected on a non-archival node) is RpcChunkError::UnknownBlock, whose
 * cause is UNKNOWN_BLOCK with info {}; a chunk hash it does not have is UNKNOWN_CHUNK; a shard past the
 * layout's is INVALID_SHARD_ID.
 */
function nearChunk(keeps: NearKeeps, { height: head }: { height: number }, params?: unknown): unknown {
  const first = Array.isArray(params) ? params[0] : undefined;
  const reference = (
    Array.isArray(first)
      ? { block_id: first[0], shard_id: first[1] }
      : typeof first === "string"
        ? { chunk_id: first }
        : (params ?? {})
  ) as { block_id?: unknown; shard_id?: unknown; chunk_id?: unknown };
  let height: number;
  let shard: number;
  if (typeof reference.chunk_id === "string") {
    const id = reference.chunk_id;
    const chunk = nearChunkOf(id);
    const chunkHeight = chunk?.height;
    if (
      chunkHeight === undefined ||
      chunkHeight > head ||
      (keeps !== "archive" && chunkHeight < head - keeps)
    )
      throw new NodeRejection(-32000, "Server error", {
        name: "HANDLER_ERROR",
        cause: { info: { chunk_hash: id }, name: "UNKNOWN_CHUNK" },
        code: -32000,
        message: "Server error",
        data: `Chunk Missing (unavailable on the node): ChunkHash(\`${id}\`) \n Cause: Unknown`,
      });
    height = chunkHeight;
    shard = chunk?.shard ?? 0;
  } else {
    height = nearHeightAt(head, keeps, { block_id: reference.block_id });
    shard = Number(reference.shard_id ?? 0);
    if (!Number.isInteger(shard) || shard < 0 || shard > 5)
      throw new NodeRejection(-32000, "Server error", {
        name: "HANDLER_ERROR",
        cause: { info: { shard_id: shard }, name: "INVALID_SHARD_ID" },
        code: -32000,
        message: "Server error",
        data: `Shard id ${shard} does not exist`,
      });
  }
  return {
    author: "figment.poolv1.near",
    header: {
      chunk_hash: nearChunkHash(height, shard),
      prev_block_hash: nearBlockHash(height - 1),
      height_created: height,
      height_included: height,
      shard_id: shard,
      gas_used: 0,
      gas_limit: 1_000_000_000_000_000,
      balance_burnt: "0",
      outgoing_receipts_root: "AChfy3dXeJjgD2w5zXkUTFb6w8kg3AYGnyyjsvc7hXLv",
      tx_root: "11111111111111111111111111111111",
      prev_state_root: "2cGq2Vx4bC7nM1sK5wJ8eR3tY6uI9oP2aS4dF7gH1jKl",
      encoded_merkle_root: "9zYue7drR1rhfzEEoc4WUXzaYRnRNihvRoGt1BgK7Lkk",
      encoded_length: 8,
      validator_proposals: [],
      signature: "ed25519:5yU8iO1pA4sD7fG9hJ2kL5zX8cV1bN3mQ6wE9rT2yU5iO8pA1sD3fG6hJ9kL2zX",
    },
    transactions: [],
    receipts: [],
  };
}

const TX_HASH_FILL = "d4".repeat(23);

/** The hash of the transaction here included at `height`: 32 bytes, a marker (0x54), the height, a filler. */
export function nearTxHash(height: number): string {
  let n = BigInt(`0x54${height.toString(16).padStart(16, "0")}${TX_HASH_FILL}`);
  let text = "";
  while (n > 0n) {
    text = `${BASE58[Number(n % 58n)]}${text}`;
    n /= 58n;
  }
  return text;
}

/** The height of the block that included the transaction `hash` names here (nearTxHash), else undefined. */
function nearTxHeight(hash: unknown): number | undefined {
  if (typeof hash !== "string") return undefined;
  let n = 0n;
  for (const c of hash) {
    const digit = BASE58.indexOf(c);
    if (digit < 0) return undefined;
    n = n * 58n + BigInt(digit);
  }
  const hex = n.toString(16);
  if (hex.length !== 64 || !hex.startsWith("54") || !hex.endsWith(TX_HASH_FILL)) return undefined;
  return Number.parseInt(hex.slice(2, 18), 16);
}

/** Whether a node at `head` keeping `keeps` blocks has the outcome of a transaction included at `height`. */
function nearKeepsOutcome(keeps: NearKeeps, head: number, height: number | undefined): height is number {
  return height !== undefined && height <= head && (keeps === "archive" || height >= head - keeps);
}

/**
 * nearcore's `tx` and `EXPERIMENTAL_tx_status` (RpcTransactionStatusRequest: `[tx_hash, sender_account_id]`
 * or `{tx_hash, sender_account_id, wait_until}`): the final execution outcome of a transaction it keeps;
 * one it never had, or garbage-collected with its block on a non-archival node, is alike
 * RpcTransactionError::UnknownTransaction (chain/jsonrpc-primitives types/transactions.rs, serde tag
 * `name`, content `info`, SCREAMING_SNAKE_CASE: a HANDLER_ERROR at HTTP 200, its data the error's text
 * "Transaction <hash> doesn't exist"; TxStatusError::MissingTransaction in chain/client).
 */
function nearTx(keeps: NearKeeps, { height: head }: { height: number }, params?: unknown): unknown {
  const given = (Array.isArray(params) ? { tx_hash: params[0], sender_account_id: params[1] } : params) as
    | { tx_hash?: unknown; sender_account_id?: unknown }
    | undefined;
  const hash = given?.tx_hash;
  const height = nearTxHeight(hash);
  if (!nearKeepsOutcome(keeps, head, height))
    throw new NodeRejection(-32000, "Server error", {
      name: "HANDLER_ERROR",
      cause: { info: { requested_transaction_hash: hash }, name: "UNKNOWN_TRANSACTION" },
      code: -32000,
      message: "Server error",
      data: `Transaction ${String(hash)} doesn't exist`,
    });
  const outcome = {
    block_hash: nearBlockHash(height),
    id: hash,
    outcome: { logs: [], receipt_ids: [], gas_burnt: 223182562500, tokens_burnt: "22318256250000000000" },
    proof: [],
  };
  return {
    final_execution_status: "FINAL",
    status: { SuccessValue: "" },
    transaction: { hash, signer_id: given?.sender_account_id, receiver_id: "receiver.near", actions: [] },
    transaction_outcome: outcome,
    receipts_outcome: [],
  };
}

/**
 * nearcore's `light_client_proof` (RpcLightClientExecutionProofRequest: `{type: "transaction",
 * transaction_hash, sender_id, light_client_head}`): the outcome's proof, or, for an outcome it never had or
 * garbage-collected, RpcLightClientProofError::UnknownTransactionOrReceipt (chain/jsonrpc-primitives
 * types/light_client.rs: its data "<id> does not exist").
 */
function nearLightClientProof(
  keeps: NearKeeps,
  { height: head }: { height: number },
  params?: unknown,
): unknown {
  const id = (params as { transaction_hash?: unknown } | undefined)?.transaction_hash;
  const height = nearTxHeight(id);
  if (!nearKeepsOutcome(keeps, head, height))
    throw new NodeRejection(-32000, "Server error", {
      name: "HANDLER_ERROR",
      cause: { info: { transaction_or_receipt_id: id }, name: "UNKNOWN_TRANSACTION_OR_RECEIPT" },
      code: -32000,
      message: "Server error",
      data: `${String(id)} does not exist`,
    });
  return {
    outcome_proof: {
      block_hash: nearBlockHash(height),
      id,
      outcome: { logs: [], receipt_ids: [] },
      proof: [],
    },
    outcome_root_proof: [],
    block_header_lite: { inner_lite: { height } },
    block_proof: [],
  };
}

/**
 * nearcore's outcome lookups by hash (`tx`, `EXPERIMENTAL_tx_status`, `light_client_proof`) on a node that
 * keeps `keeps` blocks below its head ("archive": all of them), for transactions named by nearTxHash.
 */
export function nearOutcomeReads(keeps: NearKeeps): Record<string, TypicalAnswer> {
  return {
    tx: { result: (state, params) => nearTx(keeps, state, params) },
    EXPERIMENTAL_tx_status: { result: (state, params) => nearTx(keeps, state, params) },
    light_client_proof: { result: (state, params) => nearLightClientProof(keeps, state, params) },
  };
}

/**
 * nearcore's `block` and `chunk` on a node that keeps `keeps` blocks below its head ("archive": all of
 * them), for a test that reads blocks by height or hash on an archival node and a non-archival one.
 */
export function nearBlockReads(keeps: NearKeeps): Record<string, TypicalAnswer> {
  return {
    block: { result: (state, params) => nearBlock(keeps, state, params) },
    chunk: { result: (state, params) => nearChunk(keeps, state, params) },
  };
}

/**
 * What each interface's SDK asks beyond the head and chain calls, as its node software answers it, by
 * registry interface id. An entry here wins over the shared answer of the same call (Stellar's ledger XDR).
 */
const SDK_CALLS: Readonly<Record<string, (endpoint: Endpoint) => Record<string, TypicalAnswer>>> = {
  substrate: polkadotJsCalls,
  // a default nearcore node is non-archival (near-api-js reads the final block, which it keeps)
  near: () => nearBlockReads(NEAR_KEPT_BLOCKS),
  "stellar-rpc": () => ({ getLatestLedger: { result: ({ height }) => stellarLatestLedger(height) } }),
  // starknet.js asks the spec version before its first call
  starknet: () => ({ starknet_specVersion: { result: () => "0.7.1" } }),
};
