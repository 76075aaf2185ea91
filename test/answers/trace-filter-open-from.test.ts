import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { everyNodeInRotation } from "../support/rotation.js";

// trace_filter without fromBlock scans from genesis on every node that serves it: anvil
// (`filter.from_block.unwrap_or(0)`: `{}` at height 350 is refused "block range too large, currently limited
// to 300"), Reth (`from_block.unwrap_or(0)`), Erigon (`fromBlock = 0` when nil). The guard read a left-out
// fromBlock as the served head, a 1-block range, and the whole chain reached the node unchecked; the
// registry's rule now says `openFrom: genesis`, as starknet_getEvents' does.

describe("trace_filter with fromBlock left out (real anvil, 350 blocks)", () => {
  let anvil: Anvil;
  let node: RecordingNode;
  let gw: RunningGateway;
  const rpc = (params: unknown[]) =>
    gw.call("eth", `/${KEYS.dedicated}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "trace_filter", params }),
    });
  const asked = () => node.calls.filter((c) => c.method === "trace_filter").length;

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

  it("the node reads a left-out fromBlock as block 0 (its own cap refuses the whole chain)", async () => {
    const answer = (await anvil.rpc("trace_filter", [{}]).catch((error: Error) => error)) as Error;
    expect(String(answer.message ?? answer)).toContain("block range too large");
  });

  for (const filter of [
    {},
    { toBlock: "0x15e" },
    { fromBlock: null, toBlock: "0x15e" },
    { fromBlock: "0x0" },
  ]) {
    it(`${JSON.stringify(filter)} is the chain from genesis: refused, never sent`, async () => {
      const before = asked();
      const answer = await rpc([filter]);
      expect(answer.status).toBe(413);
      expect(answer.text).toContain("BLOCK_RANGE_TOO_LARGE");
      expect(asked()).toBe(before);
    });
  }

  it("a range within the limit still reaches the node", async () => {
    const before = asked();
    const answer = await rpc([{ fromBlock: "0x14a", toBlock: "0x15e" }]);
    expect(answer.status).toBe(200);
    expect((answer.json as { result?: unknown }).result).toEqual([]);
    expect(asked()).toBe(before + 1);
  });
});
