import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS } from "../support/gateway.js";
import { NodeRejection } from "../support/node-software.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";

// verifytxoutproof checks a proof that gettxoutproof made against the node's active chain: a proof whose
// block the node has not got (or that is not on its chain) is refused -5 "Block not found in chain"
// (bitcoin/bitcoin rpc/txoutproof.cpp verifytxoutproof: LookupBlockIndex, ActiveChain().Contains; Dogecoin
// Core 1.14 rpc/rawtransaction.cpp the same with mapBlockIndex and chainActive). What a user saw: behind two
// nodes one block apart, a wallet that asked for the proof of a transaction mined in the tip block, then
// had it verified, was refused by the node behind about half the time, as if the proof were forged.

const H = 5_400_000;
const TXID = "ab".repeat(32);
/** A proof whose header is the block at `height` (the loopback's: its height in the last four bytes). */
const proofAt = (height: number) => `${"00".repeat(80)}${height.toString(16).padStart(8, "0")}`;

for (const label of ["btc", "doge"])
  describe(`${label}: a proof of the tip block's transaction, two nodes one block apart`, () => {
    let apart: NodesBlockApart;
    beforeAll(async () => {
      apart = await nodesBlockApart(
        label,
        H,
        softwareWith({
          // the transaction is in the node's tip block: one that has not got it answers -5
          gettxoutproof: { result: ({ height }) => proofAt(height) },
          verifytxoutproof: {
            result: ({ height }, params) => {
              const proof = String(Array.isArray(params) ? params[0] : "");
              if (Number.parseInt(proof.slice(-8), 16) > height)
                throw new NodeRejection(-5, "Block not found in chain");
              return [TXID];
            },
          },
        }),
      );
    });
    afterAll(async () => apart?.close());

    const rpc = async (method: string, params: unknown[], id: number) => {
      const got = await apart.gw.call(label, `/${KEYS.all}/`, {
        body: JSON.stringify({ jsonrpc: "1.0", id, method, params }),
        headers: { "content-type": "application/json" },
      });
      const json = got.json as { result?: unknown; error?: { message?: string } | null };
      return json.error?.message ?? json.result;
    };

    it("verifytxoutproof after gettxoutproof: the transaction, never the node behind's -5", async () => {
      const seen: unknown[] = [];
      for (let i = 0; i < 10; i++) {
        expect(await rpc("getblockcount", [], i)).toBe(H + 1);
        const proof = await rpc("gettxoutproof", [[TXID]], i);
        expect(proof).toBe(proofAt(H + 1));
        seen.push(await rpc("verifytxoutproof", [proof], i));
      }
      expect(seen).toEqual(seen.map(() => [TXID]));
    });
  });
