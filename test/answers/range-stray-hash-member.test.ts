import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint, Mount } from "../../src/registry/types.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import type { LoopbackNode } from "../support/loopback-node.js";
import { type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { startNodeFor } from "../support/sdk-nodes.js";
import { nodeState } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// eth_getLogs names one block by its `blockHash` instead of a range, and the range guard let such a call
// go as one block. It read that member in every range call's filter, though only a log filter takes it:
// `trace_filter` (fromBlock, toBlock, fromAddress, toAddress, mode, after, count) and `starknet_getEvents`
// (from_block, to_block, address, keys, chunk_size, continuation_token) have no hash member, and a node
// written in Go reads their filter with encoding/json, which passes over a member it does not know: Erigon's
// TraceFilterRequest scans fromBlock..toBlock, Juno's EventFilter (jsonrpc/server.go parseParam:
// json.Unmarshal) from_block..to_block. So a stray `blockHash` or `block_hash` beside a range of the whole
// chain took it to a node whole, unchecked. anvil (alloy's TraceFilter, deny_unknown_fields) refuses the
// member itself, which shows the call reached it; Pathfinder refuses it too ("unexpected field").

describe("trace_filter with a stray blockHash (real anvil, 350 blocks)", () => {
  let anvil: Anvil;
  let node: RecordingNode;
  let gw: RunningGateway;
  const rpc = (params: unknown[]) =>
    gw.call("eth", `/${KEYS.dedicated}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "trace_filter", params }),
    });
  const asked = () => node.calls.filter((c) => c.method === "trace_filter").length;
  const HASH = `0x${"11".repeat(32)}`;

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 1 });
    await anvil.rpc("anvil_mine", ["0x15e"]);
    node = await startRecordingNode(anvil.url);
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, name: "node-0" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      blockRanges: { eth: { trace_filter: { splitAbove: 50, refuseAbove: 200 } } },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    await anvil?.stop();
  });

  for (const filter of [
    { blockHash: HASH, fromBlock: "0x0", toBlock: "latest" },
    { blockHash: HASH, toBlock: "0x15e" },
    { blockHash: HASH },
  ]) {
    it(`${JSON.stringify(filter).replace(HASH, "0x11…")} is the range it names: refused, never sent`, async () => {
      const before = asked();
      const answer = await rpc([filter]);
      expect(answer.text).toContain("BLOCK_RANGE_TOO_LARGE");
      expect(answer.status).toBe(413);
      expect(asked()).toBe(before);
    });
  }

  it("eth_getLogs by its blockHash is still one block: it reaches the node", async () => {
    const before = node.calls.filter((c) => c.method === "eth_getLogs").length;
    const answer = await gw.call("eth", `/${KEYS.dedicated}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 8, method: "eth_getLogs", params: [{ blockHash: HASH }] }),
    });
    expect(answer.status).toBe(200);
    expect(node.calls.filter((c) => c.method === "eth_getLogs").length).toBeGreaterThan(before);
  });
});

const H = 700_000;

/** Juno's EVENTS_CHUNK for a range with no event (starknet-specs api/starknet_api_openrpc.json). */
const ANSWERS: Record<string, TypicalAnswer> = {
  starknet_getEvents: { result: () => ({ events: [] }) },
};

describe("starknet_getEvents with a stray block_hash (a node that reads its filter as Juno does)", () => {
  const endpoint = endpointsByLabel.get("starknet") as Endpoint;
  const state = nodeState(endpoint, H);
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    const started = await startNodeFor(endpoint, endpoint.mounts[0] as Mount, state, ANSWERS);
    node = started.node;
    gw = await startGateway({
      upstreams: { starknet: [started.upstream] } as never,
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "starknet");
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const queries = () => node.requests.filter((r) => r.body.includes('"starknet_getEvents"')).length;

  for (const filter of [
    { from_block: { block_number: 0 }, to_block: "latest", chunk_size: 100, block_hash: "0x1" },
    { chunk_size: 100, block_hash: "0x1" },
  ]) {
    it(`${JSON.stringify(filter)} is the range it names: refused, never sent`, async () => {
      const before = queries();
      const answer = await gw.call("starknet", `/${KEYS.dedicated}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "starknet_getEvents", params: { filter } }),
      });
      expect(answer.text).toContain("BLOCK_RANGE_TOO_LARGE");
      expect(answer.status).toBe(413);
      expect(queries()).toBe(before);
    });
  }
});
