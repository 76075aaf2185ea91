import { headShownByAnswers } from "../../support/head-shown.js";

// ton-http-api's getExtendedAddressInformation answers tonlib's fullAccountState, whose block_id names the
// masterchain block it was read at (tonlib_api.tl fullAccountState), as getAddressInformation's does.

const H = 45_000_000;

headShownByAnswers(
  "ton",
  H,
  {
    getExtendedAddressInformation: {
      result: ({ height }) => ({
        "@type": "fullAccountState",
        address: { "@type": "accountAddress", account_address: "EQAAAA" },
        balance: "1000",
        last_transaction_id: { "@type": "internal.transactionId", lt: "0", hash: "AAAA" },
        block_id: {
          "@type": "ton.blockIdExt",
          workchain: -1,
          shard: "-9223372036854775808",
          seqno: height,
          root_hash: "AA==",
          file_hash: "AA==",
        },
        sync_utime: 1735689600,
        account_state: { "@type": "uninited.accountState", frozen_hash: "" },
        revision: 0,
      }),
    },
  },
  [
    [
      "getExtendedAddressInformation",
      async ({ rpc }) => ((await rpc("getMasterchainInfo", {})) as { last: { seqno: number } }).last.seqno,
      async ({ rpc }) =>
        (
          (await rpc("getExtendedAddressInformation", { address: "EQAAAA" })) as {
            block_id: { seqno: number };
          }
        ).block_id.seqno,
    ],
  ],
);
