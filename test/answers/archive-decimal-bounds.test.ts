import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type Responder, startLoopbackNode } from "../support/loopback-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A log range's bound written as decimal text counts as the height it names (docs/upstreams.md, "Ranges":
// Erigon and Besu read `"16"` as block 16, as the range guard does). The archive rules read it as no block:
// `{"fromBlock": "16", "toBlock": "16"}` went as a recent read, and a Besu full node's refusal of blocks past
// its history expiry (RpcErrorType.PRUNED_HISTORY_UNAVAILABLE, code 4444 "Pruned history unavailable")
// reached the caller, where the same range written in hex went to the archive node once more.

const HEIGHT = 20_000_000;
const LOG = { address: "0x01", topics: [], data: "0x", blockNumber: "0x10", logIndex: "0x0" };
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;

/** eth_getLogs as a Besu full node past its history expiry, or an archive node, answers old blocks. */
function logs(pruned: boolean): Responder {
  return (request) => {
    if (request.method !== "POST" || !request.body.includes('"eth_getLogs"')) return undefined;
    const { id } = JSON.parse(request.body) as { id: unknown };
    return {
      body: pruned
        ? { jsonrpc: "2.0", id, error: { code: 4444, message: "Pruned history unavailable" } }
        : { jsonrpc: "2.0", id, result: [LOG] },
    };
  };
}

describe("eth_getLogs with decimal bounds on a full label (loopback full and archive nodes)", () => {
  let full: LoopbackNode;
  let archive: LoopbackNode;
  let gw: RunningGateway;
  const asked = (node: LoopbackNode) => node.requests.filter((r) => r.body.includes('"eth_getLogs"')).length;

  beforeAll(async () => {
    full = await startLoopbackNode(
      firstOf(logs(true), softwareNode(endpoint("eth"), nodeState(endpoint("eth"), HEIGHT))),
    );
    archive = await startLoopbackNode(
      firstOf(logs(false), softwareNode(endpoint("eth-archive"), nodeState(endpoint("eth-archive"), HEIGHT))),
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
    { fromBlock: "0x10", toBlock: "0x10" },
    { fromBlock: "16", toBlock: "16" },
    { fromBlock: "16", toBlock: "0x10" },
  ])
    it(`${JSON.stringify(filter)}: the archive node answers it, never the full node's refusal`, async () => {
      const before = asked(archive);
      const answer = await gw.call("eth", `/${KEYS.all}`, {
        body: rpcBody("eth_getLogs", [filter], 7),
      });
      expect(answer.text).not.toContain("Pruned history");
      expect(answer.json).toEqual({ jsonrpc: "2.0", id: 7, result: [LOG] });
      expect(answer.headers["x-upstream-tier"]).toBe("archive");
      expect(asked(archive) - before).toBe(1);
    });
});
