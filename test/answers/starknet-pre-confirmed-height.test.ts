import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// Starknet spec 0.9: the pre_confirmed block (starknet_getBlockWithTxHashes("pre_confirmed"), status
// PRE_CONFIRMED) and the receipt of a transaction in it (finality_status PRE_CONFIRMED) carry the number of
// the block still being built, one past the node's latest (starknet-specs api/starknet_api_openrpc.json,
// PRE_CONFIRMED_BLOCK_HEADER, TXN_RECEIPT_WITH_BLOCK_INFO). Learnt as a height the label has served, it
// raised the served head to a block no node has: every read at the head then waited about a block for
// one (registry `heightUnless`). An accepted receipt's block still teaches it.
const endpoint = endpointsByLabel.get("starknet") as Endpoint;
const H = 1_200_000;
const TX = `0x${"12".repeat(32)}`;
const pending = { status: "PRE_CONFIRMED" };

function receipt(state: NodeState & { finality?: string }) {
  const preConfirmed = state.finality === "PRE_CONFIRMED";
  return {
    type: "INVOKE",
    transaction_hash: TX,
    actual_fee: { amount: "0x1", unit: "FRI" },
    execution_status: "SUCCEEDED",
    finality_status: state.finality ?? "ACCEPTED_ON_L2",
    // a receipt in the pre_confirmed block names no hash, only the number of the block being built
    ...(preConfirmed ? {} : { block_hash: `0x${"34".repeat(32)}` }),
    block_number: preConfirmed ? state.height + 1 : state.height,
    messages_sent: [],
    events: [],
    execution_resources: { l1_gas: 0, l1_data_gas: 0, l2_gas: 0 },
  };
}

describe("starknet: a block still being built teaches the served head nothing", () => {
  const states: (NodeState & { finality?: string })[] = [nodeState(endpoint, H), nodeState(endpoint, H)];
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;
  beforeAll(async () => {
    for (const state of states)
      nodes.push(
        await startLoopbackNode(
          softwareNode(endpoint, () => state, [""], {
            answers: {
              starknet_getTransactionReceipt: { result: (s) => receipt(s) },
              starknet_getBlockWithTxHashes: {
                result: (s) => ({
                  ...pending,
                  block_number: s.height + 1,
                  parent_hash: `0x${"56".repeat(32)}`,
                  timestamp: 1_760_000_000,
                  sequencer_address: "0x1",
                  l1_gas_price: { price_in_fri: "0x1", price_in_wei: "0x1" },
                  l2_gas_price: { price_in_fri: "0x1", price_in_wei: "0x1" },
                  l1_data_gas_price: { price_in_fri: "0x1", price_in_wei: "0x1" },
                  l1_da_mode: "BLOB",
                  starknet_version: "0.14.0",
                  transactions: [],
                }),
              },
            },
          }),
        ),
      );
    gw = await startGateway({
      upstreams: { starknet: nodes.map((n, i) => ({ url: n.url, name: `n${i}` })) },
      // the probes see each node once: a head read that waits for a higher one waits in vain
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw, "starknet");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
  });
  const rpc = async (method: string, params: unknown) =>
    (
      (
        await gw.call("starknet", `/${KEYS.all}/`, {
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
        })
      ).json as { result: unknown }
    ).result;
  const waits = () => gw.metric("gateway_answer_rules_total", { label: "starknet", rule: "head_wait" });

  it.each([
    ["starknet_getBlockWithTxHashes", ["pre_confirmed"]],
    ["starknet_getTransactionReceipt", [TX]],
  ])(
    "after %s of the block being built, head calls still go to both nodes at the head",
    async (method, params) => {
      for (const state of states) state.finality = "PRE_CONFIRMED";
      expect(await rpc(method, params)).toMatchObject({ block_number: H + 1 });
      const before = nodes.map((n) => n.requests.length);
      const heads: unknown[] = [];
      for (let i = 0; i < 6; i++) heads.push(await rpc("starknet_blockNumber", []));
      expect(heads).toEqual(heads.map(() => H));
      // learnt, the block being built made its node the only one "at" the served head: the other got no head
      // read until a probe, and the next head answer below it read as the chain going back
      const asked = nodes.map((n, i) => n.requests.length - (before[i] ?? 0));
      expect(asked.every((n) => n > 0)).toBe(true);
      expect(await waits()).toBe(0);
    },
  );

  it("an accepted receipt's block still teaches it: the head call after it is not below that block", async () => {
    const ahead = states[0] as NodeState & { finality?: string };
    for (const state of states) state.finality = "ACCEPTED_ON_L2";
    ahead.height = H + 1;
    let seen: unknown;
    for (let i = 0; i < 10 && seen !== H + 1; i++)
      seen = ((await rpc("starknet_getTransactionReceipt", [TX])) as { block_number: number }).block_number;
    expect(seen).toBe(H + 1);
    const heads: unknown[] = [];
    for (let i = 0; i < 6; i++) heads.push(await rpc("starknet_blockNumber", []));
    expect(heads).toEqual(heads.map(() => H + 1));
  });
});
