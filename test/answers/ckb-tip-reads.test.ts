import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS } from "../support/gateway.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";

// CKB's calls that answer from the node's tip (nervosnetwork/ckb rpc/README.md): get_blockchain_info (the
// tip's epoch with its fraction, which moves with each block, and its median time), get_deployments_info
// (the tip's hash and epoch) and get_fee_rate_statistics (over the blocks before the tip). Behind two nodes
// one block apart, a caller that read the tip's number must not then read the block before from them.

const H = 15_000_000;
const hex = (n: number) => `0x${n.toString(16)}`;
/** EpochNumberWithFraction: the epoch number, the block's index in it, the epoch's length (1800). */
const epochOf = (height: number) => hex(1800 * 2 ** 40 + (height % 1800) * 2 ** 24 + 8333);
const tipHash = (height: number) => `0x${height.toString(16).padStart(64, "c")}`;

describe("ckb: reads at the tip, behind two nodes one block apart", () => {
  let apart: NodesBlockApart;
  beforeAll(async () => {
    apart = await nodesBlockApart(
      "ckb",
      H,
      softwareWith({
        get_blockchain_info: {
          result: ({ height }) => ({
            alerts: [],
            chain: "ckb",
            difficulty: "0x1b6f3fa09f86b4",
            epoch: epochOf(height),
            is_initial_block_download: false,
            median_time: hex(1_735_689_600_000 + height * 8_000),
          }),
        },
        get_deployments_info: {
          result: ({ height }) => ({ deployments: {}, epoch: hex(8333), hash: tipHash(height) }),
        },
        get_fee_rate_statistics: {
          result: ({ height }) => ({ mean: hex(1000 + (height % 7)), median: hex(1000) }),
        },
      }),
    );
  });
  afterAll(async () => apart?.close());

  const rpc = async (method: string, id: number) => {
    const got = await apart.gw.call("ckb", `/${KEYS.all}/`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params: [] }),
      headers: { "content-type": "application/json" },
    });
    return (got.json as { result?: Record<string, unknown> }).result;
  };

  for (const [method, member, expected] of [
    ["get_blockchain_info", "epoch", epochOf(H + 1)],
    ["get_deployments_info", "hash", tipHash(H + 1)],
    ["get_fee_rate_statistics", "mean", hex(1000 + ((H + 1) % 7))],
  ] as const)
    it(`${method} after get_tip_block_number: its ${member} is the tip's, never the block before's`, async () => {
      const seen: unknown[] = [];
      for (let i = 0; i < 10; i++) {
        expect(await rpc("get_tip_block_number", i)).toBe(hex(H + 1));
        seen.push((await rpc(method, i))?.[member]);
      }
      expect(seen).toEqual(seen.map(() => expected));
    });
});
