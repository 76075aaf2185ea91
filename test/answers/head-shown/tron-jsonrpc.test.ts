import { headShownByAnswers } from "../../support/head-shown.js";

// java-tron's /jsonrpc (TronJsonRpcImpl): eth_getBlockByNumber("latest") answers the node's head block, and a
// receipt names the block its transaction is in, as on any EVM node.

const H = 70_000_000;
const hex = (n: number) => `0x${n.toString(16)}`;
const TX = `0x${"ab".repeat(32)}`;
const head = async ({ rpc }: { rpc: (m: string, p: unknown, path?: string) => Promise<never> }) =>
  Number(await rpc("eth_blockNumber", [], "/jsonrpc"));

headShownByAnswers(
  "trx",
  H,
  {
    eth_getBlockByNumber: {
      result: ({ height }) => ({ number: hex(height), hash: `0x${height.toString(16).padStart(64, "0")}` }),
    },
    eth_getTransactionReceipt: {
      result: ({ height }) => ({
        transactionHash: TX,
        blockHash: `0x${height.toString(16).padStart(64, "0")}`,
        blockNumber: hex(height),
        transactionIndex: "0x0",
        status: "0x1",
        logs: [],
      }),
    },
  },
  [
    [
      "eth_getBlockByNumber(latest)",
      head,
      async ({ rpc }) =>
        Number(
          ((await rpc("eth_getBlockByNumber", ["latest", false], "/jsonrpc")) as { number: string }).number,
        ),
    ],
    [
      "eth_getTransactionReceipt",
      head,
      async ({ rpc }) =>
        Number(
          ((await rpc("eth_getTransactionReceipt", [TX], "/jsonrpc")) as { blockNumber: string }).blockNumber,
        ),
    ],
  ],
);
