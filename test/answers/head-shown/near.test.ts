import { headShownByAnswers } from "../../support/head-shown.js";

// nearcore's query request types as methods of their own answer beside the block they read
// (chain/jsonrpc-primitives types/view_account.rs RpcViewAccountResponse: block_height, block_hash).

const H = 150_000_000;

headShownByAnswers(
  "near",
  H,
  {
    EXPERIMENTAL_view_account: {
      result: ({ height }) => ({
        amount: "1000000000000000000000000",
        locked: "0",
        code_hash: "11111111111111111111111111111111",
        storage_usage: 182,
        storage_paid_at: 0,
        block_height: height,
        block_hash: "9MzuZrRPW1BGpFnZJUJg6SzCrixPpJDfjsNeUobRXsLe",
      }),
    },
  },
  [
    [
      "EXPERIMENTAL_view_account",
      async ({ rpc }) =>
        ((await rpc("status", [])) as { sync_info: { latest_block_height: number } }).sync_info
          .latest_block_height,
      async ({ rpc }) =>
        (
          (await rpc("EXPERIMENTAL_view_account", { finality: "optimistic", account_id: "a.near" })) as {
            block_height: number;
          }
        ).block_height,
    ],
  ],
);
