import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS } from "../support/gateway.js";
import { NodeRejection } from "../support/node-software.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";

// CKB's verify_transaction_proof and verify_transaction_and_witness_proof read the block the proof names
// (its `block_hash`) from the node's store and refuse one it has not got with invalid params "Cannot find
// block 0x…" (nervosnetwork/ckb rpc/src/module/chain.rs: snapshot.get_block(..).ok_or_else(
// RPCError::invalid_params)). What a user saw: behind two nodes one block apart, a proof of a transaction
// committed in the tip block, fetched with get_transaction_proof, was refused by the node behind about half
// the time.

const H = 15_000_000;
const hex = (n: number) => `0x${n.toString(16)}`;
const TX = `0x${"ab".repeat(32)}`;
const blockHash = (height: number) => `0x${height.toString(16).padStart(64, "c")}`;
const heightOf = (hash: string) => Number.parseInt(hash.slice(2).replace(/^c+/, ""), 16);

const verify = {
  result: ({ height }: { height: number }, params?: unknown) => {
    const proof = (Array.isArray(params) ? params[0] : undefined) as { block_hash?: string } | undefined;
    const hash = String(proof?.block_hash);
    if (heightOf(hash) > height) throw new NodeRejection(-32602, `Invalid params: Cannot find block ${hash}`);
    return [TX];
  },
};

describe("ckb: a proof of the tip block's transaction, two nodes one block apart", () => {
  let apart: NodesBlockApart;
  beforeAll(async () => {
    apart = await nodesBlockApart(
      "ckb",
      H,
      softwareWith({
        get_transaction_proof: {
          result: ({ height }) => ({
            block_hash: blockHash(height),
            proof: { indices: ["0x0"], lemmas: [] },
            witnesses_root: `0x${"22".repeat(32)}`,
          }),
        },
        get_transaction_and_witness_proof: {
          result: ({ height }) => ({
            block_hash: blockHash(height),
            transactions_proof: { indices: ["0x0"], lemmas: [] },
            witnesses_proof: { indices: ["0x0"], lemmas: [] },
          }),
        },
        verify_transaction_proof: verify,
        verify_transaction_and_witness_proof: verify,
      }),
    );
  });
  afterAll(async () => apart?.close());

  const rpc = async (method: string, params: unknown[], id: number) => {
    const got = await apart.gw.call("ckb", `/${KEYS.all}/`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      headers: { "content-type": "application/json" },
    });
    const json = got.json as { result?: unknown; error?: { message?: string } };
    return json.error?.message ?? json.result;
  };

  for (const [get, check] of [
    ["get_transaction_proof", "verify_transaction_proof"],
    ["get_transaction_and_witness_proof", "verify_transaction_and_witness_proof"],
  ] as const)
    it(`${check} after ${get}: the transaction, never "Cannot find block"`, async () => {
      const seen: unknown[] = [];
      for (let i = 0; i < 10; i++) {
        expect(await rpc("get_tip_block_number", [], i)).toBe(hex(H + 1));
        const proof = (await rpc(get, [[TX]], i)) as { block_hash: string };
        expect(proof.block_hash).toBe(blockHash(H + 1));
        seen.push(await rpc(check, [proof], i));
      }
      expect(seen).toEqual(seen.map(() => [TX]));
    });
});
