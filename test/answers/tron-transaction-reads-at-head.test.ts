import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Endpoint } from "../../src/registry/types.js";
import { tronBlock } from "../support/chain-answers.js";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import type { Responder } from "../support/loopback-node.js";
import { type NodesBlockApart, nodesBlockApart } from "../support/nodes-block-apart.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// A TronWeb caller reads the head block (or the PBFT-confirmed one), takes a transaction id out of it, then
// asks for that transaction: through two java-tron nodes one block apart, the node behind has not that block
// yet and answers {} as for a transaction that never was.
//
// java-tron (tronprotocol/java-tron framework/src/main/java/org/tron/core/services/http/):
// - FullNodeHttpApiService registers GetTransactionReceiptByIdServlet at /wallet/gettransactionreceiptbyid;
//   the servlet reads wallet.getTransactionInfoById(value), as gettransactioninfobyid does, and prints "{}"
//   when it is null (a transaction the node's store has not);
// - the PBFT view (HttpApiOnPBFTService: /walletpbft/gettransactionbyid, /walletpbft/gettransactioninfobyid)
//   runs the same servlets on the PBFT-confirmed store (WalletOnPBFT.futureGet), so a transaction in a block
//   the node has not PBFT-confirmed yet is {} too; its /walletpbft/getnowblock is that store's newest block.
// These nodes confirm by PBFT the block 19 below their head, as their solidity view does (chain-answers.ts).

const H = 8_000_000;
const CONFIRMED = 19;

/** The one transaction of block `num`: its id names the block. */
function txId(num: number): string {
  return `${num.toString(16).padStart(16, "0")}${"ab".repeat(24)}`;
}

/** Block number a transaction id names, or undefined for one that is not ours. */
function blockOf(body: unknown): number | undefined {
  const value = (body as { value?: unknown } | undefined)?.value;
  if (typeof value !== "string" || !value.endsWith("ab".repeat(24))) return undefined;
  return Number.parseInt(value.slice(0, 16), 16);
}

const info = (num: number) => ({
  id: txId(num),
  fee: 1_100_000,
  blockNumber: num,
  blockTimeStamp: 1_735_689_600_000,
  receipt: { net_fee: 345, result: "SUCCESS" },
});

/** A java-tron node's answers for a transaction by id, in blocks up to `top(height)`; {} past it. */
function byId(top: (height: number) => number, answer: (num: number) => unknown): TypicalAnswer {
  return {
    result: ({ height }, body) => {
      const num = blockOf(body);
      return num !== undefined && num <= top(height) ? answer(num) : {};
    },
  };
}

const head = (height: number) => height;
const pbft = (height: number) => Math.max(0, height - CONFIRMED);
const transaction = (num: number) => ({ txID: txId(num), ret: [{ contractRet: "SUCCESS" }] });

const EXTRA: Readonly<Record<string, TypicalAnswer>> = {
  "POST /wallet/gettransactioninfobyid": byId(head, info),
  "POST /wallet/gettransactionreceiptbyid": byId(head, info),
  "POST /walletpbft/getnowblock": { result: ({ height }) => tronBlock(pbft(height)) },
  "POST /walletpbft/gettransactionbyid": byId(pbft, transaction),
  "POST /walletpbft/gettransactioninfobyid": byId(pbft, info),
};

function tron(endpoint: Endpoint, height: number): Responder {
  return softwareNode(endpoint, nodeState(endpoint, height), [""], { answers: EXTRA });
}

describe("TRON transactions by id through two java-tron nodes a block apart", () => {
  let apart: NodesBlockApart | undefined;
  let gw: RunningGateway;
  beforeAll(async () => {
    apart = await nodesBlockApart("trx", H, tron);
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  const post = async (path: string, body: unknown) =>
    (await gw.call("trx", `/${KEYS.all}${path}`, { body: JSON.stringify(body) })).json as Record<
      string,
      unknown
    >;
  const number = (block: Record<string, unknown>) =>
    (block as { block_header: { raw_data: { number: number } } }).block_header.raw_data.number;

  it("a transaction of the head block just read is found by gettransactioninfobyid and gettransactionreceiptbyid", async () => {
    const found: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      const top = number(await post("/wallet/getnowblock", {}));
      expect(top).toBe(H + 1);
      for (const path of ["/wallet/gettransactioninfobyid", "/wallet/gettransactionreceiptbyid"])
        found.push([path, (await post(path, { value: txId(top) })).blockNumber]);
    }
    expect(found).toEqual(found.map((f) => [(f as string[])[0], H + 1]));
  });

  it("a transaction of the PBFT-confirmed block just read is found on /walletpbft", async () => {
    const found: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      const confirmed = number(await post("/walletpbft/getnowblock", {}));
      expect(confirmed).toBe(H + 1 - CONFIRMED);
      found.push((await post("/walletpbft/gettransactioninfobyid", { value: txId(confirmed) })).blockNumber);
      found.push((await post("/walletpbft/gettransactionbyid", { value: txId(confirmed) })).txID);
    }
    expect(found).toEqual(found.map((_, i) => (i % 2 === 0 ? H + 1 - CONFIRMED : txId(H + 1 - CONFIRMED))));
  });
});
