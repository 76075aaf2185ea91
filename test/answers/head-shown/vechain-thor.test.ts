import { headShownByAnswers, heightAt, type LabelReads } from "../../support/head-shown.js";

// Thor's transaction and its receipt name the block the transaction is in (api/doc/thor.yaml: meta.blockNumber),
// which connex and the SDKs poll for after a send: a block the node has.

const H = 20_000_000;
const TX = `0x${"56".repeat(32)}`;
const meta = (height: number) => ({
  blockID: `0x${height.toString(16).padStart(64, "0")}`,
  blockNumber: height,
  blockTimestamp: 1735689600,
  txID: TX,
  txOrigin: `0x${"78".repeat(20)}`,
});
const best = async ({ get }: LabelReads) => heightAt(await get("/blocks/best"), "number");

headShownByAnswers(
  "vet",
  H,
  {
    [`GET /transactions/${TX}/receipt`]: {
      result: ({ height }) => ({
        gasUsed: 21000,
        gasPayer: `0x${"78".repeat(20)}`,
        paid: "0x1",
        reward: "0x1",
        reverted: false,
        meta: meta(height),
        outputs: [],
      }),
    },
    [`GET /transactions/${TX}`]: {
      result: ({ height }) => ({ id: TX, chainTag: 74, size: 130, clauses: [], meta: meta(height) }),
    },
  },
  [
    [
      "a transaction's receipt",
      best,
      async ({ get }) => heightAt(await get(`/transactions/${TX}/receipt`), "meta", "blockNumber"),
    ],
    [
      "a transaction",
      best,
      async ({ get }) => heightAt(await get(`/transactions/${TX}`), "meta", "blockNumber"),
    ],
  ],
);
