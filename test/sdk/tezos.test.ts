import { RpcClient } from "@taquito/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, restResponder, startLoopbackNode } from "../support/loopback-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { sdkUrl, upstreamSawSince } from "./resolve.js";

// @taquito/rpc's RpcClient, unmodified, through the gateway to a loopback node answering like an Octez node.
//
// Host resolution: Taquito's HttpBackend uses node-fetch 2 with a fresh `new http.Agent({ keepAlive: false })`
// for every request, and offers no hook for the agent or a lookup. The only way to reach `*.gw.test` without
// replacing its transport is in-process name resolution: test/support/test-hosts.ts swaps dns.lookup (which
// net.connect reads at connect time) for this file and puts it back afterwards. System DNS is not touched.

const BLOCK = "head";
const HEAD_HASH = "BLYpsNBA1dVt6sfQGrnjqBJmUCrFuXpyNFrTKzdAYgFrpqqz6jT";
const ADDRESS = "tz1KqTpEZ7Yob7QbPE4Hy4Wo8fHG8LhKxZSx";

const HEADER = {
  protocol: "PsQuebecnLByd3JwTiGadoG4nGWi3HYiLXUjkibeFV8dCFeVMUg",
  chain_id: "NetXdQprcVkpaWU",
  hash: HEAD_HASH,
  level: 7_654_321,
  proto: 22,
  predecessor: "BLVmhVmWLMTwVhRnz5XW5pjtYGs2Fh4dH4RJdvJ6fJwa5tU9J6J",
  timestamp: "2025-01-22T19:38:45Z",
  validation_pass: 4,
  operations_hash: "LLoaaN4sB4jk2u3kDn4q3XvfYcKbnmgFCH3nHdwqRJZ8sC8sE1xZH",
  fitness: ["02", "0074c8b1", "", "ffffffff", "00000000"],
  context: "CoVDyf9y9gHfAkPWofBJffo4X4bWjmehH2LeVonDcCKKzyQYwqdk",
  payload_hash: "vh2TyrWeZ2dydEy9ZjmvrjQvyCs5tdmxsjx3adt4x6BHd3Hh8s6H",
  payload_round: 0,
  proof_of_work_nonce: "7985fafe1fb70300",
  liquidity_baking_toggle_vote: "pass",
  adaptive_issuance_vote: "pass",
  signature:
    "sigNfcT2AHzrNqWt2TWaoo7WhgNMQ5zcjPbyodnYeovMTU38uJXVjAB1r6gpYwx3KaJuTWnqxs8Ez1pfo7QRzqK7rqmVnpG6",
};

// An excerpt of a Quebec node's constants, as Octez writes them (64-bit numbers as strings).
const CONSTANTS = {
  proof_of_work_nonce_size: 8,
  nonce_length: 32,
  max_anon_ops_per_block: 132,
  max_operation_data_length: 32_768,
  max_proposals_per_delegate: 20,
  max_micheline_node_count: 50_000,
  max_micheline_bytes_limit: 50_000,
  max_allowed_global_constants_depth: 10_000,
  cache_layout_size: 3,
  michelson_maximum_type_size: 2001,
  max_slashing_period: 2,
  smart_rollup_max_wrapped_proof_binary_size: 30_000,
  smart_rollup_message_size_limit: 4096,
  smart_rollup_max_number_of_messages_per_level: "1000000",
  consensus_rights_delay: 2,
  blocks_preservation_cycles: 1,
  delegate_parameters_activation_delay: 5,
  blocks_per_cycle: 30_720,
  blocks_per_commitment: 240,
  nonce_revelation_threshold: 960,
  cycles_per_voting_period: 14,
  hard_gas_limit_per_operation: "1040000",
  hard_gas_limit_per_block: "1386666",
  proof_of_work_threshold: "-1",
  minimal_stake: "6000000000",
  minimal_frozen_stake: "600000000",
  vdf_difficulty: "10000000000",
  origination_size: 257,
  issuance_weights: {
    base_total_issued_per_minute: "80007812",
    baking_reward_fixed_portion_weight: 5120,
    baking_reward_bonus_weight: 5120,
    attesting_reward_weight: 10240,
    seed_nonce_revelation_tip_weight: 1,
    vdf_revelation_tip_weight: 1,
  },
  cost_per_byte: "250",
  hard_storage_limit_per_operation: "60000",
  quorum_min: 2000,
  quorum_max: 7000,
  min_proposal_quorum: 500,
  liquidity_baking_subsidy: "5000000",
  liquidity_baking_toggle_ema_threshold: 1_000_000_000,
  max_operations_time_to_live: 450,
  minimal_block_delay: "8",
  delay_increment_per_round: "4",
  consensus_committee_size: 7000,
  consensus_threshold_size: 4667,
  minimal_participation_ratio: { numerator: 2, denominator: 3 },
  limit_of_delegation_over_baking: 9,
  percentage_of_frozen_deposits_slashed_per_double_baking: 500,
  percentage_of_frozen_deposits_slashed_per_double_attestation: 5000,
  cache_script_size: 100_000_000,
  cache_stake_distribution_cycles: 10,
  cache_sampler_state_cycles: 10,
  dal_parametric: {
    feature_enable: true,
    incentives_enable: false,
    number_of_slots: 32,
    attestation_lag: 8,
    attestation_threshold: 66,
    redundancy_factor: 8,
    page_size: 3967,
    slot_size: 126_944,
    number_of_shards: 512,
  },
  edge_of_staking_over_delegation: 2,
  adaptive_issuance_launch_ema_threshold: 0,
  adaptive_rewards_params: {
    issuance_ratio_final_min: { numerator: "1", denominator: "400" },
    issuance_ratio_final_max: { numerator: "1", denominator: "10" },
    max_bonus: "50000000000000",
    growth_rate: { numerator: "1", denominator: "100" },
    center_dz: { numerator: "1", denominator: "2" },
    radius_dz: { numerator: "1", denominator: "50" },
  },
  adaptive_issuance_activation_vote_enable: true,
  autostaking_enable: true,
  adaptive_issuance_force_activation: false,
  ns_enable: true,
  direct_ticket_spending_enable: false,
};

const DELEGATES = ["tz1KqTpEZ7Yob7QbPE4Hy4Wo8fHG8LhKxZSx", "tz1gfArv665EUkSg2ojMBzcbfwuPxAvqPvjo"];

describe("@taquito/rpc RpcClient through the gateway", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restoreLookup: () => void;
  let rpc: RpcClient;

  beforeAll(async () => {
    restoreLookup = resolveTestHosts();
    const base = `/chains/main/blocks/${BLOCK}`;
    node = await startLoopbackNode(
      restResponder({
        [`GET ${base}/header`]: HEADER,
        [`GET ${base}/context/contracts/${ADDRESS}/balance`]: "84231770503",
        // an implicit account as Octez answers it: what Taquito reads the counter of before every operation
        [`GET ${base}/context/contracts/${ADDRESS}`]: { balance: "84231770503", counter: "1234567" },
        [`GET ${base}/context/constants`]: CONSTANTS,
        [`GET ${base}/context/delegates`]: DELEGATES,
      }),
    );
    gw = await startGateway({ upstreams: { xtz: [node.url] } });
    rpc = new RpcClient(sdkUrl(gw, "xtz"));
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restoreLookup?.();
  });

  function routes(from: number): string[] {
    return upstreamSawSince(node, from).map((seen) => `${seen.method} ${seen.url}`);
  }

  it("getBlockHeader()", async () => {
    const from = node.requests.length;
    const header = await rpc.getBlockHeader();
    expect(header).toEqual(HEADER);
    expect(header.level).toBe(7_654_321);
    expect(routes(from)).toEqual(["GET /chains/main/blocks/head/header"]);
  });

  it("getBalance()", async () => {
    const from = node.requests.length;
    const balance = await rpc.getBalance(ADDRESS);
    expect(balance.toFixed()).toBe("84231770503");
    expect(routes(from)).toEqual([`GET /chains/main/blocks/head/context/contracts/${ADDRESS}/balance`]);
  });

  it("getContract(): the contract itself, which TezosToolkit reads the counter of before every operation", async () => {
    const from = node.requests.length;
    const contract = await rpc.getContract(ADDRESS);
    expect(contract.counter).toBe("1234567");
    expect(routes(from)).toEqual([`GET /chains/main/blocks/head/context/contracts/${ADDRESS}`]);
  });

  it("getConstants()", async () => {
    const from = node.requests.length;
    const constants = await rpc.getConstants();
    expect(constants.blocks_per_cycle).toBe(30_720);
    expect(constants.consensus_committee_size).toBe(7000);
    // Taquito turns the 64-bit members into BigNumber
    expect(constants.hard_gas_limit_per_operation.toFixed()).toBe("1040000");
    expect(constants.minimal_block_delay?.toFixed()).toBe("8");
    expect(constants.cost_per_byte.toFixed()).toBe("250");
    expect(routes(from)).toEqual(["GET /chains/main/blocks/head/context/constants"]);
  });

  it("a dedicated-plan route is refused for a shared key before the node, and relayed for a dedicated one", async () => {
    const from = node.requests.length;
    const error = await rpc.getAllDelegates().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ name: "HttpResponseError", status: 403 });
    expect(JSON.parse((error as { body: string }).body)).toMatchObject({
      error: { code: "METHOD_NOT_ON_PLAN", status: 403 },
    });
    expect(node.requests.length).toBe(from);

    const dedicated = new RpcClient(sdkUrl(gw, "xtz", KEYS.dedicated));
    expect(await dedicated.getAllDelegates()).toEqual(DELEGATES);
    expect(routes(from)).toEqual(["GET /chains/main/blocks/head/context/delegates"]);
  });
});
