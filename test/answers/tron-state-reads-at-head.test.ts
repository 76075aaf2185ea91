import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// java-tron's /wallet reads of state name no block: each servlet asks Wallet (or Manager) of the stores as
// the node's head left them (tronprotocol/java-tron framework/src/main/java/org/tron/core/services/http/):
// - GetCanWithdrawUnfreezeAmountServlet: Wallet.getCanWithdrawUnfreezeAmount, {"amount": …} (the
//   CanWithdrawUnfreezeAmountResponseMessage as JsonFormat prints it), what an unfreeze mined at the head
//   made withdrawable; GetAvailableUnfreezeCountServlet {"count": …}, GetCanDelegatedMaxSizeServlet
//   {"max_size": …}, GetDelegatedResourceV2Servlet {"delegatedResource": […]} alike;
// - GetBurnTrxServlet: the DynamicPropertiesStore's burnTrxAmount, {"burnTrxAmount": …}, which each block's
//   fees raise.
// Only getaccount and its kin were read at the head: a caller who saw the block with its freeze or
// delegation read the staking state before it from the node a block behind, and the burnt amount went back.
// Here each answer is the height its node's state is at.

const H = 9_000_000;
const OWNER = "41".padEnd(42, "7");

const at = (field: string): TypicalAnswer => ({ result: ({ height }) => ({ [field]: height }) });

const ROUTES: readonly (readonly [string, string, TypicalAnswer, (got: unknown) => unknown])[] = [
  [
    "/wallet/getcanwithdrawunfreezeamount",
    "amount",
    at("amount"),
    (got) => (got as { amount?: unknown }).amount,
  ],
  ["/wallet/getavailableunfreezecount", "count", at("count"), (got) => (got as { count?: unknown }).count],
  [
    "/wallet/getcandelegatedmaxsize",
    "max_size",
    at("max_size"),
    (got) => (got as { max_size?: unknown }).max_size,
  ],
  [
    "/wallet/getdelegatedresourcev2",
    "delegatedResource",
    {
      result: ({ height }) => ({
        delegatedResource: [{ from: OWNER, to: OWNER, frozen_balance_for_energy: height }],
      }),
    },
    (got) =>
      (got as { delegatedResource?: { frozen_balance_for_energy?: unknown }[] }).delegatedResource?.[0]
        ?.frozen_balance_for_energy,
  ],
  [
    "/wallet/getburntrx",
    "burnTrxAmount",
    at("burnTrxAmount"),
    (got) => (got as { burnTrxAmount?: unknown }).burnTrxAmount,
  ],
];

describe("TRON state reads through two java-tron nodes a block apart", () => {
  let apart: NodesBlockApart | undefined;
  let gw: RunningGateway;
  beforeAll(async () => {
    apart = await nodesBlockApart(
      "trx",
      H,
      softwareWith(Object.fromEntries(ROUTES.map(([path, , answer]) => [`POST ${path}`, answer]))),
    );
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  const post = async (path: string, body: unknown) =>
    (await gw.call("trx", `/${KEYS.all}${path}`, { body: JSON.stringify(body) })).json;

  for (const [path, , , read] of ROUTES)
    it(`${path} after the head was read never answers the state before`, async () => {
      const got: unknown[] = [];
      for (let i = 0; i < 8; i++) {
        const head = (await post("/wallet/getnowblock", {})) as {
          block_header?: { raw_data: { number: number } };
        };
        expect(head.block_header?.raw_data.number).toBe(H + 1);
        got.push(read(await post(path, { owner_address: OWNER, from_address: OWNER, to_address: OWNER })));
      }
      expect(got).toEqual(got.map(() => H + 1));
    });
});
