import { JsonRpcProvider } from "near-api-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { sdkUrl, upstreamSawSince, useTestHostsForGlobalFetch } from "./resolve.js";

// near-api-js JsonRpcProvider, unmodified, through the gateway to a loopback node answering like nearcore.
//
// Host resolution: near-api-js calls global fetch with no dispatcher hook, so an undici Agent with a lookup is
// installed as the global dispatcher for this file and restored afterwards.

const HEAD_HASH = "8Q3y3bD6Fq2jQ3Xw7m5R9JdP4sV1aZ2kL6nH8cT5uE3G";
const HEAD_HEIGHT = 138_254_711;

const STATUS = {
  chain_id: "mainnet",
  genesis_hash: "EPnLgE7iEq9s7yTkos96M3cWymH5avBAPm3qx3NXqR8H",
  latest_protocol_version: 73,
  protocol_version: 73,
  node_key: null,
  node_public_key: "ed25519:6gVs9Bm2E8d4S5P7YqYb3nWk1r7nZ9tV3m2cQ4xL5hJe",
  rpc_addr: "0.0.0.0:3030",
  sync_info: {
    earliest_block_hash: "5Qpa4m2ZtS2aKqZ8WbJgD9yT3xY6r1nH7vC4eU8fL2kM",
    earliest_block_height: 138_032_911,
    earliest_block_time: "2025-01-20T08:11:02.511290551Z",
    epoch_id: "4tVxZ5n1c8bE3Lk9WqR2mP6yH7sJ2dF5gA1uN8oT3iQe",
    epoch_start_height: 138_227_911,
    latest_block_hash: HEAD_HASH,
    latest_block_height: HEAD_HEIGHT,
    latest_block_time: "2025-01-22T19:38:45.125114839Z",
    latest_state_root: "2cGq2Vx4bC7nM1sK5wJ8eR3tY6uI9oP2aS4dF7gH1jKl",
    syncing: false,
  },
  uptime_sec: 1_209_611,
  validator_account_id: null,
  validator_public_key: null,
  validators: [{ account_id: "figment.poolv1.near" }, { account_id: "bisontrails.poolv1.near" }],
  version: { build: "2.4.0", rustc_version: "1.82.0", version: "2.4.0" },
};

const BLOCK = {
  author: "figment.poolv1.near",
  chunks: [
    {
      balance_burnt: "0",
      chunk_hash: "3dTk6M1tXz3T2nP4R8yV5bC9wE2qH7uJ1kL6mA3sD4fG",
      encoded_length: 8,
      encoded_merkle_root: "9zYue7drR1rhfzEEoc4WUXzaYRnRNihvRoGt1BgK7Lkk",
      gas_limit: 1_000_000_000_000_000,
      gas_used: 0,
      height_created: HEAD_HEIGHT,
      height_included: HEAD_HEIGHT,
      outcome_root: "11111111111111111111111111111111",
      outgoing_receipts_root: "AChfy3dXeJjgD2w5zXkUTFb6w8kg3AYGnyyjsvc7hXLv",
      prev_block_hash: "7bN2f5sQ3cV6xZ9mK1pL4rT8yH2uJ5wE3aD6gF9hK1jL",
      prev_state_root: "2cGq2Vx4bC7nM1sK5wJ8eR3tY6uI9oP2aS4dF7gH1jKl",
      rent_paid: "0",
      shard_id: 0,
      signature: "ed25519:4Hh9uXxk7U9aW1eCk8Z3mV7bN2sQ5rT8yD1gF4jK6lP9oI2uY5tR3eW7qA1sD4fG",
      tx_root: "11111111111111111111111111111111",
      validator_proposals: [],
      validator_reward: "0",
    },
  ],
  header: {
    height: HEAD_HEIGHT,
    prev_height: HEAD_HEIGHT - 1,
    epoch_id: "4tVxZ5n1c8bE3Lk9WqR2mP6yH7sJ2dF5gA1uN8oT3iQe",
    next_epoch_id: "8mQ2wE5rT7yU1iO3pA6sD9fG2hJ4kL7zX1cV3bN5mQ8w",
    hash: HEAD_HASH,
    prev_hash: "7bN2f5sQ3cV6xZ9mK1pL4rT8yH2uJ5wE3aD6gF9hK1jL",
    prev_state_root: "2cGq2Vx4bC7nM1sK5wJ8eR3tY6uI9oP2aS4dF7gH1jKl",
    chunk_receipts_root: "9ETNjrt6MkwTgSVMMbpukfxRshSD1avBUUa4R4NuqwHv",
    chunk_headers_root: "6Jz8yS9nT3wQ2vX5mL1pK7rB4cD8eF2gH5jK9lM3nP6q",
    chunk_tx_root: "7tkzFg8RHBmMw1ncRJZCCZAizgq4rwCftTKYLce8RU8t",
    outcome_root: "7tkzFg8RHBmMw1ncRJZCCZAizgq4rwCftTKYLce8RU8t",
    chunks_included: 6,
    challenges_root: "11111111111111111111111111111111",
    timestamp: 1_737_574_725_125_115_000,
    timestamp_nanosec: "1737574725125115000",
    random_value: "3kR5tY8uI2oP4aS7dF1gH3jK6lZ9xC2vB5nM8qW1eR4t",
    validator_proposals: [],
    chunk_mask: [true, true, true, true, true, true],
    gas_price: "100000000",
    block_ordinal: 123_456_789,
    rent_paid: "0",
    validator_reward: "0",
    total_supply: "1201390585294627592385367219627537",
    challenges_result: [],
    last_final_block: "6nF4gH7jK1lZ3xC5vB8nM2qW4eR7tY9uI1oP3aS6dF8g",
    last_ds_final_block: "7bN2f5sQ3cV6xZ9mK1pL4rT8yH2uJ5wE3aD6gF9hK1jL",
    next_bp_hash: "5wE8rT1yU3iO6pA9sD2fG4hJ7kL1zX3cV6bN8mQ2wE5r",
    block_merkle_root: "2hJ5kL8zX1cV4bN7mQ9wE2rT5yU8iO1pA3sD6fG9hJ2k",
    epoch_sync_data_hash: null,
    approvals: ["ed25519:3sD6fG9hJ2kL5zX8cV1bN4mQ7wE9rT2yU5iO8pA1sD4fG7hJ9kL2zX5cV8bN1mQ"],
    signature: "ed25519:5yU8iO1pA4sD7fG9hJ2kL5zX8cV1bN3mQ6wE9rT2yU5iO8pA1sD3fG6hJ9kL2zX",
    latest_protocol_version: 73,
  },
};

const ACCOUNT_ID = "relay.aurora";
const VIEW_ACCOUNT = {
  amount: "399992611103597728750000000",
  block_hash: HEAD_HASH,
  block_height: HEAD_HEIGHT,
  code_hash: "E8jZ1giWcVrps8PcV75ATauu6gFRkcwjNtKp7NKmipZG",
  locked: "0",
  storage_paid_at: 0,
  storage_usage: 1_213_046,
};

function query(params: unknown): unknown {
  const request = params as { request_type?: string; account_id?: string };
  if (request.request_type === "view_account" && request.account_id === ACCOUNT_ID) return VIEW_ACCOUNT;
  throw new Error(`unexpected query ${JSON.stringify(params)}`);
}

describe("near-api-js JsonRpcProvider through the gateway", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restoreFetch: () => Promise<void>;
  let provider: JsonRpcProvider;

  beforeAll(async () => {
    restoreFetch = useTestHostsForGlobalFetch();
    node = await startLoopbackNode(jsonRpcResponder({ status: STATUS, block: BLOCK, query }));
    gw = await startGateway({ upstreams: { near: [node.url] } });
    // one attempt: a failure should show at once rather than after a minute of backoff
    provider = new JsonRpcProvider({ url: sdkUrl(gw, "near") }, { retries: 1 });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    await restoreFetch?.();
  });

  function calls(from: number): { method: string; params: unknown }[] {
    return upstreamSawSince(node, from).map((seen) => {
      expect(seen.url).toBe("/");
      return JSON.parse(seen.body) as { method: string; params: unknown };
    });
  }

  it("status", async () => {
    const from = node.requests.length;
    const status = await provider.viewNodeStatus();
    expect(status.chain_id).toBe("mainnet");
    expect(status.sync_info.latest_block_height).toBe(HEAD_HEIGHT);
    expect(status.sync_info.syncing).toBe(false);
    expect(await provider.getNetworkId()).toBe("mainnet");
    // getNetworkId reads chain_id from a second status call
    expect(calls(from)).toMatchObject([
      { method: "status", params: [] },
      { method: "status", params: [] },
    ]);
  });

  it("block by finality", async () => {
    const from = node.requests.length;
    const block = await provider.viewBlock({ finality: "final" });
    expect(block.header.height).toBe(HEAD_HEIGHT);
    expect(block.header.hash).toBe(HEAD_HASH);
    expect(block.author).toBe("figment.poolv1.near");
    expect(block.chunks).toHaveLength(1);
    expect(calls(from)).toEqual([
      { jsonrpc: "2.0", id: expect.any(String), method: "block", params: { finality: "final" } },
    ]);
  });

  it("query view_account", async () => {
    const from = node.requests.length;
    const account = await provider.viewAccount({ accountId: ACCOUNT_ID });
    expect(account.amount).toBe(399_992_611_103_597_728_750_000_000n);
    expect(account.locked).toBe(0n);
    expect(account.storage_usage).toBe(1_213_046);
    expect(account.block_height).toBe(HEAD_HEIGHT);
    expect(calls(from)).toMatchObject([
      {
        method: "query",
        params: { request_type: "view_account", account_id: ACCOUNT_ID, finality: "optimistic" },
      },
    ]);
  });

  it("the gateway's refusals carry nearcore's name and cause, so near-api-js tells them apart", async () => {
    const from = node.requests.length;
    // sendJsonRpc is typed for the methods near-api-js knows; these it does not
    const send = provider.sendJsonRpc.bind(provider) as (method: string, params: unknown) => Promise<unknown>;
    // a method the registry denies: nearcore's own METHOD_NOT_FOUND, the SDK's RpcMethodNotFoundError
    const unknown = await send("adv_produce_blocks", [1, true]).catch((error: unknown) => error);
    expect((unknown as Error).constructor.name).toBe("RpcMethodNotFoundError");
    expect(unknown).toMatchObject({ methodName: "adv_produce_blocks" });
    // any other refusal (here a key without the network): the SDK's InternalRpcError, with what and why
    const other = new JsonRpcProvider({ url: sdkUrl(gw, "near", KEYS.ethOnly) }, { retries: 1 });
    const refused = await other.viewNodeStatus().catch((error: unknown) => error);
    expect((refused as Error).constructor.name).toBe("InternalRpcError");
    expect((refused as Error).message).toContain("(NETWORK_FORBIDDEN)");
    expect(node.requests.length).toBe(from);
  });
});
