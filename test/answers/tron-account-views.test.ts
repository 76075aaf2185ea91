import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { tronBlock } from "../support/chain-answers.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { type NodesBlockApart, nodesBlockApart } from "../support/nodes-block-apart.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// TronWeb's getAccount and getAccountById on the full node and on its finalized views
// (tronprotocol/java-tron, framework/src/main/java/org/tron/core/services/):
// - http/GetAccountByIdServlet: Wallet.getAccountById, the AccountIdIndexStore and the AccountStore as the
//   node's head left them, as /wallet/getaccount;
// - interfaceOnPBFT/http/GetAccountOnPBFTServlet and GetAccountByIdOnPBFTServlet (HttpApiOnPBFTService
//   /walletpbft/getaccount, /walletpbft/getaccountbyid) run the same servlets through WalletOnPBFT.futureGet,
//   on the node's finalized store (Chainbase.Cursor.PBFT), as interfaceOnSolidity's do on the SOLIDITY cursor;
// - interfaceOnSolidity/http/GetBlockByLatestNumOnSolidityServlet: Wallet.getBlockByLatestNum on that store,
//   the newest `num` blocks the node has solidified, {"block": [...]}.
// An account here holds as many sun as the number of the block its state is read at. Each node solidifies
// the block 19 below its head unless told otherwise (chain-answers.ts).

const H = 9_000_000;
const LAG = 19;

function account(top: (height: number) => number): TypicalAnswer {
  return { result: ({ height }) => ({ address: "41".padEnd(42, "7"), balance: top(height) }) };
}

/**
 * A constant call's answer (TriggerConstantContractOnSolidityServlet, Wallet.triggerConstantContract on the
 * view's store): `constant_result` the word the contract returned, here the number of the block read at.
 */
function constant(at: (height: number) => number): TypicalAnswer {
  return {
    result: ({ height }) => ({
      result: { result: true },
      energy_used: 541,
      constant_result: [at(height).toString(16).padStart(64, "0")],
    }),
  };
}

function latest(lag: number): TypicalAnswer {
  return {
    result: ({ height }, body) => {
      const num = Number((body as { num?: unknown } | undefined)?.num ?? 0);
      const solid = height - lag;
      const blocks = [];
      for (let n = solid - num + 1; n <= solid; n++) blocks.push(tronBlock(n));
      return { block: blocks };
    },
  };
}

const post = async (gw: RunningGateway, path: string, body: unknown) =>
  (await gw.call("trx", `/${KEYS.all}${path}`, { body: JSON.stringify(body) })).json as {
    balance?: number;
    block?: { block_header: { raw_data: { number: number } } }[];
    block_header?: { raw_data: { number: number } };
  };

describe("TRON account reads through two java-tron nodes a block apart", () => {
  let apart: NodesBlockApart | undefined;
  let gw: RunningGateway;
  beforeAll(async () => {
    const answers = {
      "POST /wallet/getaccountbyid": account((height) => height),
      "POST /walletpbft/getaccount": account((height) => height - LAG),
      "POST /walletpbft/getaccountbyid": account((height) => height - LAG),
      "POST /walletsolidity/getaccountbyid": account((height) => height - LAG),
    };
    apart = await nodesBlockApart("trx", H, (endpoint, height) =>
      softwareNode(endpoint, nodeState(endpoint, height), [""], { answers }),
    );
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  for (const [path, shown] of [
    ["/wallet/getaccountbyid", H + 1],
    ["/walletpbft/getaccount", H + 1 - LAG],
    ["/walletpbft/getaccountbyid", H + 1 - LAG],
    ["/walletsolidity/getaccountbyid", H + 1 - LAG],
  ] as const)
    it(`${path} after the head was read never answers the state before`, async () => {
      const got: unknown[] = [];
      for (let i = 0; i < 8; i++) {
        expect((await post(gw, "/wallet/getnowblock", {})).block_header?.raw_data.number).toBe(H + 1);
        got.push((await post(gw, path, { account_id: "6161616161" })).balance);
      }
      expect(got).toEqual(got.map(() => shown));
    });
});

describe("TRON solidity view reads through two java-tron nodes at one head, one solidified a block less", () => {
  let nodes: LoopbackNode[] = [];
  let gw: RunningGateway;
  const trx = endpointsByLabel.get("trx") as Endpoint;

  beforeAll(async () => {
    nodes = await Promise.all(
      [LAG, LAG + 1].map((lag) =>
        startLoopbackNode(
          softwareNode(trx, nodeState(trx, H), [""], {
            answers: {
              "POST /walletsolidity/getnowblock": { result: ({ height }) => tronBlock(height - lag) },
              "POST /walletsolidity/getblockbylatestnum": latest(lag),
              "POST /walletsolidity/getaccount": account((height) => height - lag),
              "POST /walletsolidity/triggerconstantcontract": constant((height) => height - lag),
              "POST /walletsolidity/getReward": { result: ({ height }) => ({ reward: height - lag }) },
            },
          }),
        ),
      ),
    );
    const list = nodes.map((n, i) => ({ url: n.url, name: `n${i}` }));
    gw = await startGateway({
      upstreams: { trx: Object.fromEntries(trx.mounts.map((m) => [m.path, list])) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, undefined, 4000);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
  });

  const solid = async () => {
    const number = (await post(gw, "/walletsolidity/getnowblock", {})).block_header?.raw_data.number;
    expect(number).toBe(H - LAG);
  };

  it("the newest solidified blocks end at the solidified block just read", async () => {
    const got: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      await solid();
      const blocks = (await post(gw, "/walletsolidity/getblockbylatestnum", { num: 2 })).block ?? [];
      got.push(Math.max(...blocks.map((b) => b.block_header.raw_data.number)));
    }
    expect(got).toEqual(got.map(() => H - LAG));
  });

  // TronWeb's triggerConstantContract and getReward with `{ confirmed: true }` read the solidity view
  it("a constant call and a reward on the solidity view are read at the solidified block just read", async () => {
    const got: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      await solid();
      const called = (await post(gw, "/walletsolidity/triggerconstantcontract", {
        owner_address: "41".padEnd(42, "7"),
        contract_address: "41".padEnd(42, "8"),
        function_selector: "balanceOf(address)",
        parameter: "0".repeat(64),
      })) as { constant_result?: string[] };
      got.push(Number.parseInt(called.constant_result?.[0] ?? "", 16));
      await solid();
      got.push(
        (
          (await post(gw, "/walletsolidity/getReward", { address: "41".padEnd(42, "7") })) as {
            reward?: number;
          }
        ).reward,
      );
    }
    expect(got).toEqual(got.map(() => H - LAG));
  });

  it("an account on the solidity view is read at the solidified block just read", async () => {
    const got: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      await solid();
      got.push((await post(gw, "/walletsolidity/getaccount", { address: "41".padEnd(42, "7") })).balance);
    }
    expect(got).toEqual(got.map(() => H - LAG));
  });
});
