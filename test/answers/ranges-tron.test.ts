import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// Log queries on TRON's Ethereum-compatible JSON-RPC (the trx label's /jsonrpc mount, registry interface
// tron-jsonrpc) are range calls as the ethereum interface's are (docs/upstreams.md, "Ranges"): java-tron
// refuses an eth_getLogs whose toBlock minus fromBlock passes its node.jsonrpc.maxBlockRange (5,000 by
// default; LogFilterWrapper.java), so the registry's refuseAbove is 5,000 blocks and a range wider than
// 2,000 blocks runs as sub-ranges. Without those rules a log query from block 0 reached the node whole. A loopback java-tron
// (test/support/software-node.ts) on every mount of the label, 1,000,000 blocks high.

const HEIGHT = 1_000_000;
const hex = (height: number) => `0x${height.toString(16)}`;

describe("eth_getLogs and eth_newFilter ranges on TRON's /jsonrpc (a loopback java-tron)", () => {
  const endpoint = endpointsByLabel.get("trx");
  if (endpoint === undefined) throw new Error("no trx label");
  const state = nodeState(endpoint, HEIGHT);
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(
      softwareNode(endpoint, () => state, [""], {
        answers: {
          eth_getLogs: { result: () => [] },
          eth_newFilter: { result: () => `0x${"0f".repeat(16)}` },
        },
      }),
    );
    gw = await startGateway({
      upstreams: { trx: Object.fromEntries(endpoint.mounts.map((m) => [m.path, [node.url]])) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "trx", 4_000);
    await eventually(
      () => (gw.gateway.upstreams.group("trx", "/jsonrpc")?.served.height ?? 0) >= HEIGHT,
      4_000,
      "the /jsonrpc mount served the head",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const rpc = (method: string, params: unknown[]) =>
    gw.call("trx", `/${KEYS.all}/jsonrpc`, { body: rpcBody(method, params, 7) });
  /** The ranges of the calls of `method` the node was asked, as [from, to] (a tag as it was written). */
  const asked = (method: string) =>
    node.requests
      .filter((r) => r.body.includes(`"${method}"`))
      .map((r) => {
        const filter = (JSON.parse(r.body) as { params: { fromBlock?: string; toBlock?: string }[] })
          .params[0];
        return [filter?.fromBlock, filter?.toBlock];
      });

  it("eth_getLogs from block 0 to latest (1,000,000 blocks) is refused 413 BLOCK_RANGE_TOO_LARGE and never reaches the node", async () => {
    for (const filter of [
      { fromBlock: "0x0", toBlock: "latest" },
      { fromBlock: "earliest", toBlock: "latest" },
      { fromBlock: "EARLIEST" },
      { fromBlock: "0x0", toBlock: "finalized" },
      // 5,001 blocks: one past refuseAbove
      { fromBlock: hex(HEIGHT - 5_000), toBlock: hex(HEIGHT) },
    ]) {
      node.requests.length = 0;
      const answer = await rpc("eth_getLogs", [filter]);
      expect(answer.status, JSON.stringify(filter)).toBe(413);
      expect(answer.json, JSON.stringify(filter)).toMatchObject({
        id: 7,
        error: {
          code: -32005,
          data: { code: "BLOCK_RANGE_TOO_LARGE", method: "eth_getLogs", refuseAbove: 5_000 },
        },
      });
      expect(asked("eth_getLogs"), JSON.stringify(filter)).toEqual([]);
    }
  });

  it("a filter from block 0 is refused as wide as a log query, and never reaches the node", async () => {
    node.requests.length = 0;
    const answer = await rpc("eth_newFilter", [{ fromBlock: "0x0", toBlock: "latest" }]);
    expect(answer.status).toBe(413);
    expect(answer.json).toMatchObject({
      error: { data: { code: "BLOCK_RANGE_TOO_LARGE", method: "eth_newFilter" } },
    });
    expect(asked("eth_newFilter")).toEqual([]);
  });

  it("a narrow eth_getLogs (and filter) is relayed to the node as sent", async () => {
    node.requests.length = 0;
    const filter = { fromBlock: hex(HEIGHT - 10), toBlock: "latest" };
    const answer = await rpc("eth_getLogs", [filter]);
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ id: 7, result: [] });
    expect(asked("eth_getLogs")).toEqual([[filter.fromBlock, filter.toBlock]]);
    const made = await rpc("eth_newFilter", [filter]);
    expect(made.json).toMatchObject({ id: 7, result: `0x${"0f".repeat(16)}` });
    expect(asked("eth_newFilter")).toEqual([[filter.fromBlock, filter.toBlock]]);
  });

  it("4,000 blocks reach the node as two sub-ranges of 2,000, each within java-tron's own cap", async () => {
    node.requests.length = 0;
    const from = HEIGHT - 3_999;
    const answer = await rpc("eth_getLogs", [{ fromBlock: hex(from), toBlock: hex(HEIGHT) }]);
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ id: 7, result: [] });
    const ranges = asked("eth_getLogs").map(([a, b]) => [Number(a), Number(b)]);
    expect(ranges.sort((a, b) => (a[0] as number) - (b[0] as number))).toEqual([
      [from, from + 1_999],
      [from + 2_000, HEIGHT],
    ]);
  });
});
