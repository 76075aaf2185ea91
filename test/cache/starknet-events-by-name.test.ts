import { RpcProvider } from "starknet";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint, Mount } from "../../src/registry/types.js";
import { sdkUrl, useTestHostsForGlobalFetch } from "../sdk/resolve.js";
import { eventually } from "../support/eventually.js";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import type { LoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { startNodeFor } from "../support/sdk-nodes.js";
import { nodeState } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// starknet.js sends its params by name (`RpcProvider.getEvents(filter)` is `starknet_getEvents` with
// `{"filter": {…}}`, starknet.js RpcChannel.getEvents), as the spec allows. The registry's `paramNames` says
// where the filter is, and routing read it there (answers/read-need.ts rangeRead), but the cache read the
// range positionally only: a by-name query was never kept nor coalesced, and twenty identical queries of
// long-settled blocks all reached the node (docs/cache.md: an `eth_getLogs`-like range ending at a final
// block is kept until evicted; identical calls in flight reach the node once).

const H = 700_000;
/** Pathfinder's l1_accepted block: a few blocks below its head. */
const L1_LAG = 5;
const FROM = H - 1_000;
const TO = H - 900;
const ADDRESS = "0x49d36570d4e46f48e99674bd3fcc84644ddd6b96f7c741b1562b82f9e004dc7";

/** Pathfinder's EVENTS_CHUNK (starknet-specs api/starknet_api_openrpc.json): one event of the range. */
function eventsChunk(): unknown {
  return {
    events: [
      {
        from_address: ADDRESS,
        keys: ["0x99cd8bde557814842a3121e8ddfd433a539b8c9f14bf31ebf108d12e6196e9"],
        data: ["0x1", "0x2", "0x3e8", "0x0"],
        block_hash: `0x${(TO - 3).toString(16)}`,
        block_number: TO - 3,
        transaction_hash: "0x7a1c",
      },
    ],
  };
}

/** A block header as Pathfinder answers starknet_getBlockWithTxHashes: `l1_accepted` its settled block. */
function blockAt(height: number, params: unknown): unknown {
  const id = Array.isArray(params) ? params[0] : (params as { block_id?: unknown }).block_id;
  const n =
    id === "l1_accepted"
      ? height - L1_LAG
      : typeof id === "object" && id !== null
        ? Number((id as { block_number?: number }).block_number)
        : height;
  return {
    status: n <= height - L1_LAG ? "ACCEPTED_ON_L1" : "ACCEPTED_ON_L2",
    block_hash: `0x${n.toString(16)}`,
    parent_hash: `0x${(n - 1).toString(16)}`,
    block_number: n,
    new_root: "0x2",
    timestamp: 1_735_689_600 + n,
    sequencer_address: "0x1176a1bd84444c89232ec27754698e5d2e7e1a7f1539f12027f28b23ec9f3d8",
    transactions: [],
  };
}

const ANSWERS: Record<string, TypicalAnswer> = {
  starknet_getEvents: { result: () => eventsChunk() },
  starknet_getBlockWithTxHashes: { result: ({ height }, params) => blockAt(height, params) },
};

describe("starknet.js getEvents (params by name) through the cache", () => {
  const endpoint = endpointsByLabel.get("starknet") as Endpoint;
  const state = nodeState(endpoint, H);
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restoreFetch: () => Promise<void>;

  beforeAll(async () => {
    restoreFetch = useTestHostsForGlobalFetch();
    const started = await startNodeFor(endpoint, endpoint.mounts[0] as Mount, state, ANSWERS);
    node = started.node;
    gw = await startGateway({
      upstreams: { starknet: [started.upstream] } as never,
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
    await everyNodeInRotation(gw, "starknet");
    // the prober has read the node's settled block (l1_accepted) at least once
    await eventually(() => probes("l1_accepted") >= 2, 4_000, "the settled block probed");
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    await restoreFetch?.();
  });

  const probes = (text: string) => node.requests.filter((r) => r.body.includes(text)).length;
  const queries = () => node.requests.filter((r) => r.body.includes('"starknet_getEvents"')).length;

  it("twenty identical settled-range queries reach the node once, and a later one is a hit", async () => {
    const provider = new RpcProvider({ nodeUrl: sdkUrl(gw, "starknet") });
    const filter = {
      from_block: { block_number: FROM },
      to_block: { block_number: TO },
      address: ADDRESS,
      keys: [],
      chunk_size: 100,
    };
    const before = queries();
    const all = await Promise.all(Array.from({ length: 20 }, () => provider.getEvents(filter)));
    for (const chunk of all) expect(chunk.events[0]?.block_number).toBe(TO - 3);
    expect(queries() - before).toBe(1);
    // the range ended far below the settled block: the answer is final, and kept
    state.height += 1;
    const heads = probes('"starknet_blockNumber"');
    await eventually(() => probes('"starknet_blockNumber"') >= heads + 2, 4_000, "the new head probed");
    await provider.getEvents(filter);
    expect(queries() - before).toBe(1);
  });
});
