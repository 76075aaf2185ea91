import { xdr } from "@stellar/stellar-sdk";

// A Stellar ledger as stellar-sdk reads it, for the loopback Stellar RPC behind the SDK snippets
// (sdk-nodes.ts): the shared getLatestLedger answer (typical-calls.ts) carries no XDR, which the SDK needs.

/**
 * Stellar RPC 23's getLatestLedger: the ledger's header and close meta as XDR beside its sequence, which
 * stellar-sdk 15 decodes (it throws without them). The meta is a v2 LedgerCloseMeta of an empty ledger.
 */
export function stellarLatestLedger(height: number): unknown {
  const hash = (fill: number) => Buffer.alloc(32, fill);
  const closeTime = "1737574725";
  const header = new xdr.LedgerHeader({
    ledgerVersion: 23,
    previousLedgerHash: hash(1),
    scpValue: new xdr.StellarValue({
      txSetHash: hash(2),
      closeTime: xdr.Uint64.fromString(closeTime),
      upgrades: [],
      ext: xdr.StellarValueExt.stellarValueBasic(),
    }),
    txSetResultHash: hash(3),
    bucketListHash: hash(4),
    ledgerSeq: height,
    totalCoins: xdr.Int64.fromString("1054439020873472865"),
    feePool: xdr.Int64.fromString("52373281123"),
    inflationSeq: 0,
    idPool: xdr.Uint64.fromString("2367523321"),
    baseFee: 100,
    baseReserve: 5_000_000,
    maxTxSetSize: 1000,
    skipList: [hash(5), hash(6), hash(7), hash(8)],
    ext: new xdr.LedgerHeaderExt(0),
  });
  const meta = new xdr.LedgerCloseMeta(
    2,
    new xdr.LedgerCloseMetaV2({
      ext: new xdr.LedgerCloseMetaExt(0),
      ledgerHeader: new xdr.LedgerHeaderHistoryEntry({
        hash: hash(9),
        header,
        ext: new xdr.LedgerHeaderHistoryEntryExt(0),
      }),
      // the classic and the Soroban phase, both empty
      txSet: new xdr.GeneralizedTransactionSet(
        1,
        new xdr.TransactionSetV1({
          previousLedgerHash: hash(1),
          phases: [new xdr.TransactionPhase(0, []), new xdr.TransactionPhase(0, [])],
        }),
      ),
      txProcessing: [],
      upgradesProcessing: [],
      scpInfo: [],
      totalByteSizeOfLiveSorobanState: xdr.Uint64.fromString("0"),
      evictedKeys: [],
    }),
  );
  return {
    id: hash(9).toString("hex"),
    protocolVersion: 23,
    sequence: height,
    closeTime,
    headerXdr: header.toXDR("base64"),
    metadataXdr: meta.toXDR("base64"),
  };
}
