import { headShownByAnswers } from "../../support/head-shown.js";

// stellar-sdk's getEvents (stellar-rpc get_events.go GetEventsResponse) and simulateTransaction
// (simulate_transaction.go SimulateTransactionResponse) both name the node's latestLedger.

const H = 55_000_000;
const latest = async ({ rpc }: { rpc: (m: string, p: unknown) => Promise<never> }) =>
  ((await rpc("getLatestLedger", {})) as { sequence: number }).sequence;

headShownByAnswers(
  "xlm",
  H,
  {
    getEvents: {
      result: ({ height }) => ({
        events: [],
        cursor: `${height}-0`,
        latestLedger: height,
        oldestLedger: height - 120_959,
        latestLedgerCloseTime: "1735689600",
        oldestLedgerCloseTime: "1735084800",
      }),
    },
    simulateTransaction: {
      result: ({ height }) => ({
        transactionData: "",
        minResourceFee: "100",
        events: [],
        latestLedger: height,
      }),
    },
  },
  [
    [
      "getEvents",
      latest,
      async ({ rpc }) =>
        ((await rpc("getEvents", { startLedger: H - 10, filters: [] })) as { latestLedger: number })
          .latestLedger,
    ],
    [
      "simulateTransaction",
      latest,
      async ({ rpc }) =>
        ((await rpc("simulateTransaction", { transaction: "AAAA" })) as { latestLedger: number })
          .latestLedger,
    ],
  ],
);
