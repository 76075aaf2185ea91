import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";

// java-tron's /jsonrpc state reads take `latest` alone and read the node's head (tronprotocol/java-tron
// framework/src/main/java/org/tron/core/services/jsonrpc/TronJsonRpcImpl.java getTrxBalance: `latest` is
// wallet.getAccount on the head's state, `earliest`, `pending` and `finalized` TAG_NOT_SUPPORT_ERROR, a number
// QUANTITY_NOT_SUPPORT_ERROR; getCall, getStorageAt, getABIOfSmartContract alike). The registry named no
// block for them, so they went to any node: behind two nodes a block apart a caller that read the head with
// eth_blockNumber (viem's getBalance after waitForTransactionReceipt) was told the balance before the head
// block. Here the balance, and a call's word, are the height the node's state is at.

const H = 70_000_000;
const hex = (n: number) => `0x${n.toString(16)}`;
const ADDRESS = "0x4142434445464748494a4b4c4d4e4f5051525354";

describe("TRON /jsonrpc state reads through two java-tron nodes a block apart", () => {
  let apart: NodesBlockApart | undefined;
  let gw: RunningGateway;
  beforeAll(async () => {
    apart = await nodesBlockApart(
      "trx",
      H,
      softwareWith({
        eth_getBalance: { result: ({ height }) => hex(height) },
        eth_call: { result: ({ height }) => `0x${height.toString(16).padStart(64, "0")}` },
      }),
    );
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  const rpc = async (method: string, params: unknown[], id: number) => {
    const got = await gw.call("trx", `/${KEYS.all}/jsonrpc`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      headers: { "content-type": "application/json" },
    });
    return (got.json as { result?: unknown }).result;
  };

  for (const [method, params] of [
    ["eth_getBalance", [ADDRESS, "latest"]],
    ["eth_call", [{ to: ADDRESS, data: "0x18160ddd" }, "latest"]],
  ] as const)
    it(`${method} after eth_blockNumber reads the head's state, never the one before`, async () => {
      const seen: unknown[] = [];
      for (let i = 0; i < 8; i++) {
        expect(await rpc("eth_blockNumber", [], i)).toBe(hex(H + 1));
        const result = await rpc(method, [...params], i);
        seen.push(typeof result === "string" ? Number.parseInt(result, 16) : result);
      }
      expect(seen).toEqual(seen.map(() => H + 1));
    });
});
