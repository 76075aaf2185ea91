import { headShownByAnswers, heightAt } from "../../support/head-shown.js";
import { HEAD_ANSWERS, type TypicalAnswer } from "../../support/typical-calls.js";

// algosdk: statusAfterBlock(round) for a round the node is past answers its NodeStatus at once (go-algorand
// handlers.go WaitForBlock), whose last-round is the node's head; supply() answers the node's current_round
// (LedgerSupply); an account's asset holding its round (AccountAssetResponse).

const H = 40_000_000;
const status = HEAD_ANSWERS["GET /v2/status"] as TypicalAnswer;

headShownByAnswers(
  "algo",
  H,
  {
    [`GET /v2/status/wait-for-block-after/${H}`]: status,
    "GET /v2/ledger/supply": {
      result: ({ height }) => ({
        current_round: height,
        "online-money": 1_000_000,
        "total-money": 2_000_000,
      }),
    },
    "GET /v2/accounts/AAAA/assets/31566704": {
      result: ({ height }) => ({
        round: height,
        "asset-holding": { amount: 1, "asset-id": 31566704, "is-frozen": false },
      }),
    },
  },
  [
    [
      "statusAfterBlock (wait-for-block-after)",
      async ({ get }) => heightAt(await get("/v2/status"), "last-round"),
      async ({ get }) => heightAt(await get(`/v2/status/wait-for-block-after/${H}`), "last-round"),
    ],
    [
      "supply (/v2/ledger/supply)",
      async ({ get }) => heightAt(await get("/v2/status"), "last-round"),
      async ({ get }) => heightAt(await get("/v2/ledger/supply"), "current_round"),
    ],
    [
      "accountAssetInformation",
      async ({ get }) => heightAt(await get("/v2/status"), "last-round"),
      async ({ get }) => heightAt(await get("/v2/accounts/AAAA/assets/31566704"), "round"),
    ],
  ],
);
