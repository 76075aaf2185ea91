import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type Responder, startLoopbackNode } from "../support/loopback-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// trace_filter without fromBlock scans from genesis on every node that serves it (registry `openFrom:
// genesis`: Reth and anvil `from_block.unwrap_or(0)`, Erigon 0 when nil), and the range guard counts it so.
// Its read of history did not: the archive rules read a left-out start as the head, a recent block, so
// `{"toBlock": "0x10"}` went as any read does, and a full node's refusal of the old blocks (Reth's
// EthApiError::PrunedHistoryUnavailable, code 4444 "pruned history unavailable", past its history expiry)
// reached the caller, where the same range written `{"fromBlock": "0x0", "toBlock": "0x10"}` went to the
// archive node once more (docs/upstreams.md, "Archive where it is needed": a range by its start).

const HEIGHT = 20_000_000;
const TRACE = {
  action: { from: "0x01", to: "0x02", value: "0x0", gas: "0x5208", input: "0x", callType: "call" },
  blockNumber: 16,
  result: { gasUsed: "0x0", output: "0x" },
  subtraces: 0,
  traceAddress: [],
  type: "call",
};
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;

/** trace_filter as a full node past its history expiry, or an archive node, answers a range of old blocks. */
function traces(pruned: boolean): Responder {
  return (request) => {
    if (request.method !== "POST" || !request.body.includes('"trace_filter"')) return undefined;
    const { id } = JSON.parse(request.body) as { id: unknown };
    return {
      body: pruned
        ? { jsonrpc: "2.0", id, error: { code: 4444, message: "pruned history unavailable" } }
        : { jsonrpc: "2.0", id, result: [TRACE] },
    };
  };
}

describe("trace_filter from genesis on a full label (loopback full and archive nodes)", () => {
  let full: LoopbackNode;
  let archive: LoopbackNode;
  let gw: RunningGateway;
  const asked = (node: LoopbackNode) => node.requests.filter((r) => r.body.includes('"trace_filter"')).length;

  beforeAll(async () => {
    full = await startLoopbackNode(
      firstOf(traces(true), softwareNode(endpoint("eth"), nodeState(endpoint("eth"), HEIGHT))),
    );
    archive = await startLoopbackNode(
      firstOf(
        traces(false),
        softwareNode(endpoint("eth-archive"), nodeState(endpoint("eth-archive"), HEIGHT)),
      ),
    );
    gw = await startGateway({
      upstreams: {
        eth: [{ url: full.url, name: "full" }],
        "eth-archive": [{ url: archive.url, name: "archive" }],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await eventually(
      () => gw.gateway.upstreams.groups().every((g) => g.served.height === HEIGHT),
      5_000,
      "both labels' heads served",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await full?.close();
    await archive?.close();
  });

  for (const filter of [
    { fromBlock: "0x0", toBlock: "0x10" },
    { toBlock: "0x10" },
    { fromBlock: null, toBlock: "0x10" },
  ])
    it(`${JSON.stringify(filter)}: the archive node answers it, never the full node's refusal`, async () => {
      const before = asked(archive);
      const answer = await gw.call("eth", `/${KEYS.dedicated}`, {
        body: rpcBody("trace_filter", [filter], 7),
      });
      expect(answer.text).not.toContain("pruned history");
      expect(answer.json).toEqual({ jsonrpc: "2.0", id: 7, result: [TRACE] });
      expect(answer.headers["x-upstream-tier"]).toBe("archive");
      expect(asked(archive) - before).toBe(1);
    });
});
