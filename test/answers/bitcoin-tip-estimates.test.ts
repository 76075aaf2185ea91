import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS } from "../support/gateway.js";
import { NodeRejection } from "../support/node-software.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";

// Bitcoin Core's and Dogecoin Core's getnetworkhashps and getdifficulty answer from the node's tip
// (rpc/mining.cpp GetNetworkHashPS: the last `nblocks` blocks before the tip, or before `height` when it
// names one below the tip, else the tip; rpc/blockchain.cpp getdifficulty: the tip's). Dogecoin retargets
// every block (DigiShield), and a node's hash rate estimate moves with each block on every chain: behind two
// nodes one block apart a dashboard polling them with getblockcount saw them go back. A height past a
// node's tip is refused by Bitcoin Core 28 (-8) and read at the tip by Dogecoin Core 1.14: such a call must go
// to a node at the head it names.

const H = 5_400_000;
const estimate = (height: number) => height * 1_000;

for (const label of ["btc", "doge"])
  describe(`${label}: estimates at the tip, behind two nodes one block apart`, () => {
    let apart: NodesBlockApart;
    beforeAll(async () => {
      apart = await nodesBlockApart(
        label,
        H,
        softwareWith({
          getnetworkhashps: {
            result: ({ height }, params) => {
              const at = Array.isArray(params) ? (params[1] as number | undefined) : undefined;
              // Bitcoin Core 28 refuses a height past its tip; Dogecoin Core 1.14 reads its tip for one
              if (label === "btc" && at !== undefined && at > height)
                throw new NodeRejection(-8, "Block does not exist at specified height");
              return estimate(at !== undefined && at >= 0 && at < height ? at : height);
            },
          },
          getdifficulty: { result: ({ height }) => estimate(height) / 7 },
        }),
      );
    });
    afterAll(async () => apart?.close());

    const rpc = async (method: string, params: unknown[], id: number) => {
      const got = await apart.gw.call(label, `/${KEYS.all}/`, {
        body: JSON.stringify({ jsonrpc: "1.0", id, method, params }),
        headers: { "content-type": "application/json" },
      });
      return (got.json as { result?: unknown }).result;
    };

    for (const [method, params, expected] of [
      ["getnetworkhashps", [], estimate(H + 1)],
      ["getnetworkhashps", [120, H + 1], estimate(H + 1)],
      ["getdifficulty", [], estimate(H + 1) / 7],
    ] as const)
      it(`${method}(${params.join(", ")}) after getblockcount: the tip the count named, never the one before`, async () => {
        const seen: unknown[] = [];
        for (let i = 0; i < 10; i++) {
          expect(await rpc("getblockcount", [], i)).toBe(H + 1);
          seen.push(await rpc(method, [...params], i));
        }
        expect(seen).toEqual(seen.map(() => expected));
      });
  });
