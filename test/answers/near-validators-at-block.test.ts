import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS } from "../support/gateway.js";
import { NodeRejection, nearBlockHash, nearHeightOf } from "../support/node-software.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";

// nearcore's EXPERIMENTAL_validators_ordered names its block as `validators` does ({"block_id": height or
// hash}, or [block_id]); a node that has not got the block answers it, as `validators` does, with
// RpcValidatorError::UnknownEpoch (chain/client-primitives: DBNotFoundErr is GetValidatorInfoError::UnknownEpoch),
// a handler error at HTTP 200. A caller who saw the block from the node ahead must get the validators at it,
// not that error from the node behind: by height the read goes to a node that has reached it, by hash it is
// asked of another node.

const H = 140_000_000;

const unknownEpoch = () =>
  new NodeRejection(-32000, "Server error", {
    name: "HANDLER_ERROR",
    cause: { name: "UNKNOWN_EPOCH" },
    code: -32000,
    message: "Server error",
    data: "Unknown Epoch",
  });

/** The height a block_id names (a height, or one of the loopback's block hashes). */
function heightOf(params: unknown): number | undefined {
  const id = Array.isArray(params) ? params[0] : (params as { block_id?: unknown } | undefined)?.block_id;
  if (typeof id === "number") return id;
  return typeof id === "string" ? nearHeightOf(id) : undefined;
}

const atBlock =
  (answer: (height: number) => unknown) =>
  ({ height }: { height: number }, params?: unknown) => {
    const at = heightOf(params);
    if (at !== undefined && at > height) throw unknownEpoch();
    return answer(at ?? height);
  };

describe("near: validators at a block only the node ahead has", () => {
  let apart: NodesBlockApart;
  beforeAll(async () => {
    apart = await nodesBlockApart(
      "near",
      H,
      softwareWith({
        EXPERIMENTAL_validators_ordered: {
          result: atBlock((h) => [
            { account_id: `v${h}.poolv1.near`, public_key: "ed25519:abc", stake: "1" },
          ]),
        },
        validators: {
          result: atBlock((h) => ({
            current_validators: [],
            next_validators: [],
            current_proposals: [],
            epoch_start_height: h,
            epoch_height: 1,
            prev_epoch_kickout: [],
            current_fishermen: [],
            next_fishermen: [],
          })),
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
    return got.json as { result?: unknown; error?: unknown };
  };

  for (const [method, params] of [
    ["EXPERIMENTAL_validators_ordered", { block_id: H + 1 }],
    ["EXPERIMENTAL_validators_ordered", [H + 1]],
    ["EXPERIMENTAL_validators_ordered", { block_id: nearBlockHash(H + 1) }],
    ["validators", { block_id: nearBlockHash(H + 1) }],
  ] as const)
    it(`${method}(${JSON.stringify(params)}): never the node behind's UNKNOWN_EPOCH`, async () => {
      const errors: unknown[] = [];
      for (let i = 0; i < 10; i++) {
        const answer = await rpc(method, params, i);
        if (answer.error !== undefined) errors.push(answer.error);
        else expect(answer.result).toBeDefined();
      }
      expect(errors).toEqual([]);
    });
});
