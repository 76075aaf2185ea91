import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// toncenter's reads of an account at the node's last masterchain block, as getTransactions,
// getAddressBalance and runGetMethod are: getTransactionsStd (ton-http-api-cpp's getTransactions, the
// account's transactions from its last one the node has), getTokenData (a jetton or NFT contract's get
// methods, run at the last block) and estimateFee (the account's state at the last block). Behind two nodes
// one block apart, a caller who saw the head block (getMasterchainInfo) and the transaction made in it must
// not then be answered without it by the node behind.

const H = 50_000_000;
const ADDRESS = "EQCD39VS5jcptHL8vMjEXrzGaRcCVYto7HUn4bpAOg8xqB2N";

const ANSWERS: Readonly<Record<string, TypicalAnswer>> = {
  // one transaction of the account in each block, its lt the block's
  getTransactionsStd: {
    result: ({ height }) => ({
      "@type": "blocks.transactions",
      transactions: [{ "@type": "raw.transaction", transaction_id: { lt: String(height * 1_000_000) } }],
    }),
  },
  // a jetton master minting in each block: its supply the block's
  getTokenData: {
    result: ({ height }) => ({
      total_supply: String(height),
      mintable: true,
      contract_type: "jetton_master",
    }),
  },
};

describe("ton: account reads at the last block, behind two nodes one block apart", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;

  beforeAll(async () => {
    const ton = endpointsByLabel.get("ton") as Endpoint;
    nodes = await Promise.all(
      [H + 1, H].map((h) =>
        startLoopbackNode(softwareNode(ton, nodeState(ton, h), [""], { answers: ANSWERS })),
      ),
    );
    const list = nodes.map((node, n) => ({ url: node.url, name: n === 0 ? "ahead" : "behind" }));
    gw = await startGateway({
      upstreams: {
        ton: ton.mounts.length === 1 ? list : Object.fromEntries(ton.mounts.map((m) => [m.path, list])),
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "ton");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  const rpc = async (method: string, params: unknown, id: number) => {
    const got = await gw.call("ton", `/${KEYS.all}/jsonRPC`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      headers: { "content-type": "application/json" },
    });
    return (got.json as { result?: Record<string, unknown> }).result;
  };

  it("getTransactionsStd after getMasterchainInfo: the head block's transaction is there", async () => {
    const lts: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      expect((await rpc("getMasterchainInfo", {}, i))?.last).toMatchObject({ seqno: H + 1 });
      const answer = await rpc("getTransactionsStd", { address: ADDRESS, limit: 1 }, i);
      lts.push(
        (answer?.transactions as { transaction_id: { lt: string } }[] | undefined)?.[0]?.transaction_id.lt,
      );
    }
    expect(lts).toEqual(lts.map(() => String((H + 1) * 1_000_000)));
  });

  it("getTokenData after getMasterchainInfo: the supply the head block minted", async () => {
    const supplies: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      expect((await rpc("getMasterchainInfo", {}, i))?.last).toMatchObject({ seqno: H + 1 });
      supplies.push((await rpc("getTokenData", { address: ADDRESS }, i))?.total_supply);
    }
    expect(supplies).toEqual(supplies.map(() => String(H + 1)));
  });
});
