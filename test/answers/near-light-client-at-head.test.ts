import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS } from "../support/gateway.js";
import { NodeRejection, nearBlockHash, nearHeightOf } from "../support/node-software.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";

// nearcore's light client calls name blocks and transactions by hash, in members the block rules do not
// read (`light_client_head`, `last_block_hash`, `block_hash`, `transaction_hash`): a light client takes the
// head it verifies against from next_light_client_block and then asks for a proof of its transaction
// against it. A node that has not got the block answers, as a handler error at HTTP 200,
// RpcLightClientProofError::UnknownBlock ("Block either has never been observed on the node or has been
// garbage collected") or UnknownTransactionOrReceipt for an outcome it has not executed
// (near/nearcore chain/jsonrpc-primitives/src/types/light_client.rs, chain/client view_client_actor.rs
// GetExecutionOutcome, GetBlockProof, GetNextLightClientBlock). What a user saw: behind two nodes one
// block apart, the proof of the head block's transaction, against the head block the caller was just
// given, failed with the node behind's UNKNOWN_BLOCK about half the time.

const H = 140_000_000;

const handlerError = (name: string, data: string) =>
  new NodeRejection(-32000, "Server error", {
    name: "HANDLER_ERROR",
    cause: { name, info: {} },
    code: -32000,
    message: "Server error",
    data,
  });

const unknownBlock = () =>
  handlerError(
    "UNKNOWN_BLOCK",
    "Block either has never been observed on the node or has been garbage collected: DB Not Found Error: BLOCK HEADER",
  );

/** Whether a node at `height` has the block a hash names (the loopback's hashes count their heights). */
const has = (height: number, hash: unknown) => {
  const at = typeof hash === "string" ? nearHeightOf(hash) : undefined;
  return at !== undefined && at <= height;
};

const lite = (h: number) => ({
  prev_block_hash: nearBlockHash(h - 1),
  inner_rest_hash: "11111111111111111111111111111111",
  inner_lite: {
    height: h,
    epoch_id: "e",
    next_epoch_id: "n",
    prev_state_root: "s",
    outcome_root: "o",
    timestamp: 1,
    timestamp_nanosec: "1",
    next_bp_hash: "b",
    block_merkle_root: "m",
  },
});

const proof = {
  result: ({ height }: { height: number }, params?: unknown) => {
    const p = params as { light_client_head?: unknown; transaction_hash?: unknown };
    if (!has(height, p.light_client_head)) throw unknownBlock();
    if (!has(height, p.transaction_hash))
      throw handlerError("UNKNOWN_TRANSACTION_OR_RECEIPT", `${String(p.transaction_hash)} does not exist`);
    return { outcome_proof: {}, outcome_root_proof: [], block_header_lite: lite(height), block_proof: [] };
  },
};

describe("near: light client calls by hash, two nodes one block apart", () => {
  let apart: NodesBlockApart;
  beforeAll(async () => {
    apart = await nodesBlockApart(
      "near",
      H,
      softwareWith({
        light_client_proof: proof,
        EXPERIMENTAL_light_client_proof: proof,
        next_light_client_block: {
          result: ({ height }, params) => {
            if (!has(height, (params as { last_block_hash?: unknown }).last_block_hash)) throw unknownBlock();
            return lite(height);
          },
        },
        light_client_block_proof: {
          result: ({ height }, params) => {
            const p = params as { block_hash?: unknown; light_client_head?: unknown };
            if (!has(height, p.block_hash) || !has(height, p.light_client_head)) throw unknownBlock();
            return { block_header_lite: lite(height), block_proof: [] };
          },
        },
      }),
    );
  });
  afterAll(async () => apart?.close());

  const rpc = async (method: string, params: unknown, id: number) => {
    const got = await apart.gw.call("near", `/${KEYS.all}/`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      headers: { "content-type": "application/json" },
    });
    return got.json as { result?: unknown; error?: { cause?: { name?: string } } };
  };

  const head = nearBlockHash(H + 1);
  const transaction = {
    type: "transaction",
    transaction_hash: nearBlockHash(H + 1),
    sender_id: "alice.near",
  };
  for (const [method, params] of [
    ["light_client_proof", { ...transaction, light_client_head: head }],
    ["EXPERIMENTAL_light_client_proof", { ...transaction, light_client_head: head }],
    ["next_light_client_block", { last_block_hash: head }],
    ["light_client_block_proof", { block_hash: head, light_client_head: head }],
  ] as const)
    it(`${method} after status: never the node behind's UNKNOWN_BLOCK`, async () => {
      const errors: unknown[] = [];
      for (let i = 0; i < 10; i++) {
        const status = (await rpc("status", [], i)).result as { sync_info: { latest_block_height: number } };
        expect(status.sync_info.latest_block_height).toBe(H + 1);
        const answer = await rpc(method, params, i);
        if (answer.error !== undefined) errors.push(answer.error.cause?.name);
        else expect(answer.result).toBeDefined();
      }
      expect(errors).toEqual([]);
    });
});
