import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type Responder, startLoopbackNode } from "../support/loopback-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// EIP-4444's history expiry: a full node without a block's body, receipts or logs answers code 4444. geth
// and Reth write "pruned history unavailable"; Nethermind writes it "Pruned history unavailable"
// (Nethermind.JsonRpc ErrorMessages.PrunedHistoryUnavailable), as Besu (RpcErrorType
// PRUNED_HISTORY_UNAVAILABLE) and Nimbus do. The registry's missingState held the first spelling only, read
// case by case: a Nethermind full node's refusal of an old log range reached the caller, never the archive
// node, and a key without archive access got the node's raw error, not ARCHIVE_REQUIRED.

const HEIGHT = 20_000_000;
const LOG = { address: "0x01", topics: [], data: "0x", blockNumber: "0x10", logIndex: "0x0" };
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;

/** eth_getLogs as a Nethermind full node past its history expiry, or an archive node, answers old blocks. */
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

describe("a Nethermind full node's history expiry on a full label (loopback full and archive nodes)", () => {
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
    { fromBlock: "0x10", toBlock: "0x20" },
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

  it("a key without archive access gets ARCHIVE_REQUIRED, never the node's error", async () => {
    const answer = await gw.call("eth", `/${KEYS.noArchive}`, {
      body: rpcBody("eth_getLogs", [{ fromBlock: "0x10", toBlock: "0x10" }], 7),
    });
    expect(answer.text).not.toContain("Pruned history");
    expect(answer.json).toMatchObject({
      id: 7,
      error: { data: { code: "ARCHIVE_REQUIRED", archiveLabel: "eth-archive" } },
    });
  });
});
