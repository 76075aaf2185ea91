import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A block still being built (a live tag: EVM's `pending`, Starknet's `pre_confirmed`) is numbered one past
// the node's head: Starknet 0.9's PRE_CONFIRMED_BLOCK_HEADER.block_number is "the block number of the block
// that the proposer is currently building", and anvil's pending block is its head plus one. One such read
// raised the label's served head to a block no node had made: reads at the head then waited for it, and a
// read of that block by number went at once to a node without it (Starknet's BLOCK_NOT_FOUND).

const GENESIS = 1_700_000_000;

describe("EVM: eth_getBlockByNumber(pending) on real anvil", () => {
  let nodes: Anvil[];
  let gw: RunningGateway;

  beforeAll(async () => {
    nodes = await Promise.all(
      [0, 1].map(() => startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 })),
    );
    for (let block = 1; block <= 3; block++)
      await Promise.all(nodes.map((node) => node.rpc("evm_mine", [GENESIS + 12 * block])));
    gw = await startGateway({
      upstreams: { eth: nodes.map((node, i) => ({ url: node.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.stop()));
  });

  it("leaves the served head at the nodes' head", async () => {
    const pending = await gw.call("eth", `/${KEYS.all}`, {
      body: rpcBody("eth_getBlockByNumber", ["pending", false]),
    });
    expect(Number((pending.json as { result: { number: string } }).result.number)).toBe(4);
    expect(gw.gateway.upstreams.group("eth", "/")?.served.height).toBe(3);
    const head = await gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_blockNumber") });
    expect((head.json as { result: string }).result).toBe("0x3");
  });
});

describe("Starknet: starknet_getBlockWithTxHashes(pre_confirmed)", () => {
  const starknet = endpointsByLabel.get("starknet") as Endpoint;
  const H = 1_500_000;
  const state = nodeState(starknet, H);
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  const gasPrice = { price_in_fri: "0x1", price_in_wei: "0x1" };
  const answers = {
    starknet_getBlockWithTxHashes: {
      result: (s: { height: number }, params?: unknown) => {
        const id = Array.isArray(params) ? params[0] : (params as { block_id: unknown }).block_id;
        // spec 0.9: the block the proposer is building, with no hash, parent or status yet
        if (id === "pre_confirmed")
          return {
            block_number: s.height + 1,
            timestamp: GENESIS,
            sequencer_address: "0x1",
            l1_gas_price: gasPrice,
            l1_data_gas_price: gasPrice,
            l2_gas_price: gasPrice,
            l1_da_mode: "BLOB",
            starknet_version: "0.14.0",
            transactions: [],
          };
        const n = (id as { block_number?: number } | undefined)?.block_number ?? s.height;
        return {
          status: "ACCEPTED_ON_L2",
          block_hash: `0x${n.toString(16)}`,
          parent_hash: `0x${(n - 1).toString(16)}`,
          block_number: n,
          new_root: "0x1",
          timestamp: GENESIS,
          sequencer_address: "0x1",
          transactions: [],
        };
      },
    },
  };

  beforeAll(async () => {
    nodes = await Promise.all(
      [0, 1].map(() => startLoopbackNode(softwareNode(starknet, () => state, [""], { answers }))),
    );
    gw = await startGateway({
      upstreams: { starknet: nodes.map((node) => node.url) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw, "starknet");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("leaves the served head at the nodes' head", async () => {
    const pre = await gw.call("starknet", `/${KEYS.all}`, {
      body: rpcBody("starknet_getBlockWithTxHashes", ["pre_confirmed"]),
    });
    expect(pre.json).toMatchObject({ result: { block_number: H + 1 } });
    expect(gw.gateway.upstreams.group("starknet", "/")?.served.height).toBe(H);
  });
});
