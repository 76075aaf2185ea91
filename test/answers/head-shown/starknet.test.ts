import { headShownByAnswers } from "../../support/head-shown.js";

// starknet.js's waitForTransaction ends on a receipt, which names the block the transaction is in
// (starknet-specs TXN_RECEIPT_WITH_BLOCK_INFO: block_number): a block the node has.

const H = 1_200_000;
const TX = `0x${"12".repeat(32)}`;

headShownByAnswers(
  "starknet",
  H,
  {
    starknet_getTransactionReceipt: {
      result: ({ height }) => ({
        type: "INVOKE",
        transaction_hash: TX,
        actual_fee: { amount: "0x1", unit: "FRI" },
        execution_status: "SUCCEEDED",
        finality_status: "ACCEPTED_ON_L2",
        block_hash: `0x${"34".repeat(32)}`,
        block_number: height,
        messages_sent: [],
        events: [],
        execution_resources: { l1_gas: 0, l1_data_gas: 0, l2_gas: 0 },
      }),
    },
  },
  [
    [
      "starknet_getTransactionReceipt",
      ({ rpc }) => rpc("starknet_blockNumber", []),
      async ({ rpc }) =>
        ((await rpc("starknet_getTransactionReceipt", [TX])) as { block_number: number }).block_number,
    ],
  ],
);
