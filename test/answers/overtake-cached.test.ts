import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { LabelUpstreams } from "../../src/config/types.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// Two nodes of each software overtake each other every few calls; a caller alternates the head call with
// another head-relative read of the family, 60 calls in all, and reads the height each answer shows, with
// the answer cache on (the default): it never goes down. A head call's answer kept for its head epoch would
// show a lower head than the other read did, but that the other read's answer teaches the served head
// (registry heightIn, heightInPaths).

const PROBE_MS = 100;
const H = 5_000_000;
const hex = (n: number) => `0x${n.toString(16)}`;

const EXTRA: Readonly<Record<string, TypicalAnswer>> = {
  block: {
    result: ({ height }) => ({
      author: "x.near",
      header: { height, hash: "5mzY6JkVd2zK8T9HxR3o4bM5fN7qW2eY1uP9aS3dF6gH" },
      chunks: [],
    }),
  },
  starknet_getBlockWithTxHashes: {
    result: ({ height }) => ({
      block_number: height,
      block_hash: hex(height * 7),
      status: "ACCEPTED_ON_L2",
      transactions: [],
    }),
  },
  system_syncState: {
    result: ({ height }) => ({ startingBlock: 0, currentBlock: height, highestBlock: height }),
  },
  get_tip_header: { result: ({ height }) => ({ number: hex(height), hash: `0x${"ab".repeat(32)}` }) },
  getblockchaininfo: { result: ({ height }) => ({ chain: "main", blocks: height, headers: height }) },
  getLedgerEntries: { result: ({ height }) => ({ entries: [], latestLedger: height }) },
  "GET /v2/accounts/AAAA": { result: ({ height }) => ({ address: "AAAA", amount: 1, round: height }) },
  "GET /chains/main/blocks/head/helpers/current_level": {
    result: ({ height }) => ({ level: height, cycle: 1 }),
  },
  "GET /chain/last-block": { result: ({ height }) => ({ height, timeStamp: 1, signer: "x" }) },
};

interface Family {
  label: string;
  head: () => Promise<number>;
  other: () => Promise<number>;
}

describe("the head never goes back while two nodes overtake each other, answer cache on (non-EVM families)", () => {
  const nodes: LoopbackNode[] = [];
  const states = new Map<string, [NodeState, NodeState]>();
  let gw: RunningGateway;
  // not Ogmios: its other reads at the tip answer a slot, which is no block height to hold the head to
  const labels = ["near", "starknet", "dot", "ckb", "btc", "xlm", "algo", "xtz", "nem"];

  beforeAll(async () => {
    const upstreams: Record<string, LabelUpstreams> = {};
    for (const label of labels) {
      const endpoint = endpointsByLabel.get(label) as Endpoint;
      const pair: [NodeState, NodeState] = [nodeState(endpoint, H + 1), nodeState(endpoint, H)];
      states.set(label, pair);
      const started = await Promise.all(
        pair.map((s) => startLoopbackNode(softwareNode(endpoint, () => s, [""], { answers: EXTRA }))),
      );
      nodes.push(...started);
      upstreams[label] = started.map((node, n) => ({ url: node.url, name: `n${n}` }));
    }
    gw = await startGateway({
      upstreams,
      health: { ...DEFAULT_HEALTH, probeIntervalMs: PROBE_MS },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
    await everyNodeInRotation(gw, undefined, 40 * PROBE_MS);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((node) => node.close()));
  });

  const rpc = async (label: string, method: string, params: unknown, path = "/") => {
    const got = await gw.call(label, `/${KEYS.all}${path}`, {
      body: JSON.stringify({ jsonrpc: label === "btc" ? "1.0" : "2.0", id: 1, method, params }),
      headers: { "content-type": "application/json" },
    });
    return (got.json as { result: never }).result;
  };
  const get = async (label: string, path: string) =>
    (await gw.call(label, `/${KEYS.all}${path}`)).json as never;

  const families: Family[] = [
    {
      label: "near",
      head: async () =>
        ((await rpc("near", "status", [])) as { sync_info: { latest_block_height: number } }).sync_info
          .latest_block_height,
      other: async () =>
        ((await rpc("near", "block", { finality: "optimistic" })) as { header: { height: number } }).header
          .height,
    },
    {
      label: "starknet",
      head: async () => rpc("starknet", "starknet_blockNumber", []),
      other: async () =>
        ((await rpc("starknet", "starknet_getBlockWithTxHashes", ["latest"])) as { block_number: number })
          .block_number,
    },
    {
      label: "dot",
      head: async () => Number(((await rpc("dot", "chain_getHeader", [])) as { number: string }).number),
      other: async () =>
        ((await rpc("dot", "system_syncState", [])) as { currentBlock: number }).currentBlock,
    },
    {
      label: "ckb",
      head: async () => Number(await rpc("ckb", "get_tip_block_number", [])),
      other: async () => Number(((await rpc("ckb", "get_tip_header", [])) as { number: string }).number),
    },
    {
      label: "btc",
      head: async () => rpc("btc", "getblockcount", []),
      other: async () => ((await rpc("btc", "getblockchaininfo", [])) as { blocks: number }).blocks,
    },
    {
      label: "xlm",
      head: async () => ((await rpc("xlm", "getLatestLedger", {})) as { sequence: number }).sequence,
      other: async () =>
        ((await rpc("xlm", "getLedgerEntries", { keys: ["AAAA"] })) as { latestLedger: number }).latestLedger,
    },
    {
      label: "algo",
      head: async () => ((await get("algo", "/v2/status")) as { "last-round": number })["last-round"],
      other: async () => ((await get("algo", "/v2/accounts/AAAA")) as { round: number }).round,
    },
    {
      label: "xtz",
      head: async () => ((await get("xtz", "/chains/main/blocks/head/header")) as { level: number }).level,
      other: async () =>
        ((await get("xtz", "/chains/main/blocks/head/helpers/current_level")) as { level: number }).level,
    },
    {
      label: "nem",
      head: async () => ((await get("nem", "/chain/height")) as { height: number }).height,
      other: async () => ((await get("nem", "/chain/last-block")) as { height: number }).height,
    },
  ];

  for (const family of families) {
    it.concurrent(`${family.label}: head call and another head read, 60 calls, nodes overtaking every 6`, async () => {
      const pair = states.get(family.label) as [NodeState, NodeState];
      const seen: number[] = [];
      for (let i = 0; i < 60; i++) {
        if (i > 0 && i % 6 === 0) {
          // the one behind jumps one past the leader
          const [a, b] = pair;
          if (a.height < b.height) a.height = b.height + 1;
          else b.height = a.height + 1;
        }
        seen.push(await (i % 2 === 0 ? family.head() : family.other()));
      }
      const back = seen.filter((h, i) => i > 0 && h < (seen[i - 1] as number));
      expect(back, `${family.label}: ${seen.join(" ")}`).toEqual([]);
    });
  }
});
