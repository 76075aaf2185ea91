// geth's eth_fillTransaction(args) fills an unsigned transaction's defaults, and with no `gas`
// it estimates it (internal/ethapi/api.go FillTransaction -> args.setDefaults(ctx, b, false) ->
// DoEstimateGas): the call at `to` (or, with none, the init code in `data`) runs on the node, and a revert's
// data comes back in the error, as eth_estimateGas's does. docs/plans.md: a key locked to its contracts is
// held to the list on "every call that runs contract code": eth_estimateGas was, eth_fillTransaction reached
// the node for any contract (registry contracts: eth_fillTransaction params.0.to).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StaticKey } from "../../src/config/types.js";
import { type RunningGateway, rpcBody, startGateway, TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

const AA = "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const BB = "0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const LOCKED = "FNlockedFillTransaction0000000";
const KEYS_LOCKED: StaticKey[] = [
  { key: LOCKED, networks: "*", rate: { perSecond: 1000, burst: 1000 }, settings: { contracts: [AA] } },
];

describe("eth_fillTransaction under a contract lock", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    node = await startLoopbackNode(
      jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1", eth_estimateGas: "0x5208" }),
    );
    gw = await startGateway({ upstreams: { eth: [node.url] }, keys: [...TEST_KEYS, ...KEYS_LOCKED] });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const sent = async (method: string, params: unknown[]) => {
    const before = node.requests.length;
    const answer = await gw.call("eth", `/${LOCKED}`, { body: rpcBody(method, params) });
    const reached = node.requests.slice(before).some((r) => JSON.stringify(r).includes(method));
    return { status: answer.status, reached };
  };

  it("eth_estimateGas of another contract is refused (control)", async () => {
    const r = await sent("eth_estimateGas", [{ to: BB, data: "0x70a08231" }]);
    expect(r.status).toBe(403);
    expect(r.reached).toBe(false);
  });

  it("eth_fillTransaction, which runs the same estimate, of another contract is refused too", async () => {
    const r = await sent("eth_fillTransaction", [{ from: AA, to: BB, data: "0x70a08231" }]);
    expect(r.reached).toBe(false);
    expect(r.status).toBe(403);
  });

  it("eth_fillTransaction with init code (no `to`), which runs any code, is refused", async () => {
    const r = await sent("eth_fillTransaction", [{ from: AA, data: "0x6000600055" }]);
    expect(r.reached).toBe(false);
    expect(r.status).toBe(403);
  });

  it("eth_fillTransaction of a listed contract reaches the node", async () => {
    expect((await sent("eth_fillTransaction", [{ from: AA, to: AA, data: "0x70a08231" }])).reached).toBe(
      true,
    );
  });
});
