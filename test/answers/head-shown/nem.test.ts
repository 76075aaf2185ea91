import { headShownByAnswers, heightAt } from "../../support/head-shown.js";

// NIS1's transaction by hash (TransactionMetaDataPair: meta.height, the block it is in), which nem-sdk polls
// after an announce: a block the node has.

const H = 4_500_000;

headShownByAnswers(
  "nem",
  H,
  {
    "GET /transaction/get": {
      result: ({ height }) => ({
        meta: { innerHash: {}, id: 1, hash: { data: "ab".repeat(32) }, height },
        transaction: {
          timeStamp: 1,
          amount: 1,
          fee: 1,
          recipient: "TAAAA",
          type: 257,
          deadline: 2,
          version: -1744830463,
          signer: "cd".repeat(32),
        },
      }),
    },
  },
  [
    [
      "a transaction by hash",
      async ({ get }) => heightAt(await get("/chain/height"), "height"),
      async ({ get }) => heightAt(await get(`/transaction/get?hash=${"ab".repeat(32)}`), "meta", "height"),
    ],
  ],
);
