import { Address, TonClient } from "@ton/ton";
import { JsonRpcProvider } from "near-api-js";
import { RpcProvider } from "starknet";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint, Mount } from "../../src/registry/types.js";
import { sdkUrl, useTestHostsForGlobalFetch } from "../sdk/resolve.js";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import type { LoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { startNodeFor } from "../support/sdk-nodes.js";
import { nodeState } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// What a user saw: near-api-js, starknet.js and @ton/ton each read the head (1000), a block was made, an
// everyday read showed it (an account at 1001, the latest block 1001), and the head call read right after
// answered 1000 again: its answer was kept for the label's head, which that read had not raised. Each read's
// answer names the block it read (registry `heightIn`): the label's served head learns it, and the head call
// never goes back (issue 30). Unmodified SDKs against two loopback nodes per label, answer cache on.
//
// How the nodes answer the other reads:
// - nearcore `query` view_account (near-api-js viewAccount, finality "optimistic" by default): the account
//   beside the block it was read at, `block_height` and `block_hash` (chain/jsonrpc-primitives
//   types/query.rs RpcQueryResponse, #[serde(flatten)] kind beside block_height, block_hash).
// - pathfinder `starknet_blockHashAndNumber` (starknet.js getBlockLatestAccepted): {block_hash, block_number}
//   of the node's latest block (starknet-specs api/starknet_api_openrpc.json BLOCK_HASH_AND_NUMBER).
// - ton-http-api `getAddressInformation` (@ton/ton getContractState): tonlib's raw.fullAccountState, read at
//   the liteserver's last masterchain block, `block_id` (pyTON tonlibclient raw_get_account_state).

const H = 9_100_000;
const B58 = "8Q3y3bD6Fq2jQ3Xw7m5R9JdP4sV1aZ2kL6nH8cT5uE3G";
const TON_ADDRESS = "EQCD39VS5jcptHL8vMjEXrzGaRcCVYto7HUn4bpAOg8xqB2N";

const EXTRA: Readonly<Record<string, Record<string, TypicalAnswer>>> = {
  near: {
    query: {
      result: ({ height }) => ({
        amount: "1000000000000000000000000",
        locked: "0",
        code_hash: "11111111111111111111111111111111",
        storage_usage: 182,
        storage_paid_at: 0,
        block_height: height,
        block_hash: B58,
      }),
    },
  },
  starknet: {
    starknet_blockHashAndNumber: {
      result: ({ height }) => ({ block_hash: `0x${(height * 7).toString(16)}`, block_number: height }),
    },
  },
  toncenter: {
    getAddressInformation: {
      result: ({ height }) => ({
        "@type": "raw.fullAccountState",
        balance: "1000000000",
        extra_currencies: [],
        code: "",
        data: "",
        last_transaction_id: { "@type": "internal.transactionId", lt: "0", hash: `${"A".repeat(43)}=` },
        block_id: {
          "@type": "ton.blockIdExt",
          workchain: -1,
          shard: "-9223372036854775808",
          seqno: height,
          root_hash: "kVhVnWR0y4b7ZQ0m3Zq0Yb9q4k1P2Vv6w8G9Xx1Aa2E=",
          file_hash: "Yx3Wq2v0o8N7m6L5k4J3i2H1g0F9e8D7c6B5a4Z3y2A=",
        },
        frozen_hash: "",
        sync_utime: 1_735_689_600,
        "@extra": "1735689600.123456:0:0.5",
        state: "uninitialized",
      }),
    },
  },
};

describe("an SDK's other read shows a newer block; its head call must not go back after it", () => {
  const nodes: LoopbackNode[] = [];
  const states = new Map<string, NodeState[]>();
  let gw: RunningGateway;
  let restoreFetch: () => Promise<void>;
  let restoreLookup: () => void;

  beforeAll(async () => {
    restoreFetch = useTestHostsForGlobalFetch();
    restoreLookup = resolveTestHosts();
    const upstreams: Record<string, unknown[]> = {};
    for (const label of ["near", "starknet", "ton"]) {
      const endpoint = endpointsByLabel.get(label) as Endpoint;
      const mount = endpoint.mounts[0] as Mount;
      const pair = [nodeState(endpoint, H), nodeState(endpoint, H)];
      states.set(label, pair);
      upstreams[label] = [];
      for (const state of pair) {
        const started = await startNodeFor(endpoint, mount, state, EXTRA[mount.policy.id] ?? {});
        nodes.push(started.node);
        (upstreams[label] as unknown[]).push(started.upstream);
      }
    }
    gw = await startGateway({
      upstreams: upstreams as never,
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
    restoreLookup?.();
    await restoreFetch?.();
  });

  const move = (label: string) => {
    for (const s of states.get(label) as NodeState[]) s.height += 1;
  };

  it("near-api-js: viewNodeStatus(), a block, viewAccount() (optimistic), viewNodeStatus()", async () => {
    const near = new JsonRpcProvider({ url: sdkUrl(gw, "near") });
    const seen = [(await near.viewNodeStatus()).sync_info.latest_block_height];
    move("near");
    seen.push((await near.viewAccount({ accountId: "alice.near" })).block_height);
    seen.push((await near.viewNodeStatus()).sync_info.latest_block_height);
    expect(seen).toEqual([H, H + 1, H + 1]);
  });

  it("starknet.js: getBlockNumber(), a block, getBlockLatestAccepted(), getBlockNumber()", async () => {
    const provider = new RpcProvider({ nodeUrl: sdkUrl(gw, "starknet") });
    const seen = [await provider.getBlockNumber()];
    move("starknet");
    seen.push((await provider.getBlockLatestAccepted()).block_number);
    seen.push(await provider.getBlockNumber());
    expect(seen).toEqual([H, H + 1, H + 1]);
  });

  it("@ton/ton: getMasterchainInfo(), a block, getContractState(), getMasterchainInfo()", async () => {
    const client = new TonClient({ endpoint: `${sdkUrl(gw, "ton")}/jsonRPC` });
    const seen = [(await client.getMasterchainInfo()).latestSeqno];
    move("ton");
    seen.push((await client.getContractState(Address.parse(TON_ADDRESS))).blockId.seqno);
    seen.push((await client.getMasterchainInfo()).latestSeqno);
    expect(seen).toEqual([H, H + 1, H + 1]);
  });
});
