import { headShownByAnswers } from "../../support/head-shown.js";

// CKB's indexer tip (get_indexer_tip: IndexerTip's block_number) and the pool's view of the tip
// (tx_pool_info: TxPoolInfo's tip_number) name blocks the node has: lumos and ccc read the indexer's.

const H = 14_000_000;
const hex = (n: number) => `0x${n.toString(16)}`;
const tip = async ({ rpc }: { rpc: (m: string, p: unknown) => Promise<never> }) =>
  Number(await rpc("get_tip_block_number", []));

headShownByAnswers(
  "ckb",
  H,
  {
    get_indexer_tip: {
      result: ({ height }) => ({ block_hash: `0x${"7e".repeat(32)}`, block_number: hex(height) }),
    },
    tx_pool_info: {
      result: ({ height }) => ({
        tip_hash: `0x${"7e".repeat(32)}`,
        tip_number: hex(height),
        pending: "0x0",
        proposed: "0x0",
        orphan: "0x0",
        total_tx_size: "0x0",
        total_tx_cycles: "0x0",
        min_fee_rate: "0x3e8",
        min_rbf_rate: "0x5dc",
        last_txs_updated_at: "0x0",
        tx_size_limit: "0x7d000",
        max_tx_pool_size: "0xaba9500",
        verify_queue_size: "0x0",
      }),
    },
  },
  [
    [
      "get_indexer_tip",
      tip,
      async ({ rpc }) =>
        Number(((await rpc("get_indexer_tip", [])) as { block_number: string }).block_number),
    ],
    [
      "tx_pool_info",
      tip,
      async ({ rpc }) => Number(((await rpc("tx_pool_info", [])) as { tip_number: string }).tip_number),
    ],
  ],
);
