import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { everyNodeInRotation } from "../support/rotation.js";

// geth's debug_getModifiedAccountsByNumber(startNum, endNum?) compares the state tries of two blocks
// (go-ethereum eth/api_debug.go getModifiedAccounts: trie.NewStateTrie of each root, then a difference
// iterator over both): (0, head) walks the whole state. Its bounds are two params of their own, where every
// range rule read a filter object's members: the call reached the node however wide. It is held to its
// registry range (reads.ranges, 10 000 blocks) and refused BLOCK_RANGE_TOO_LARGE before any node sees it.
// anvil does not serve the method (it answers -32601 "Method not found"): the refusal, and the recording
// node in front of it, are what the test sees.

const ETH_MAINNET = 1;
/** The chain's head: a few blocks, anvil mines some 75 a second. */
const HEAD = 40;
const hex = (n: number) => `0x${n.toString(16)}`;

describe("debug_getModifiedAccountsByNumber is held to a block range (real anvil)", () => {
  let anvil: Anvil;
  let node: RecordingNode;
  /** The registry's limits (10 000 blocks), and a deployment's of 20 blocks for the method. */
  let registry: RunningGateway;
  let deployment: RunningGateway;

  const modified = (gw: RunningGateway, params: unknown[]) =>
    gw.call("eth", `/${KEYS.dedicated}`, {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "debug_getModifiedAccountsByNumber", params }),
      headers: { "content-type": "application/json" },
    });
  const asked = () =>
    node.calls
      .filter((call) => call.method === "debug_getModifiedAccountsByNumber")
      .map((call) => call.params);
  const refusal = (from: number, to: number, refuseAbove: number) => ({
    id: 3,
    error: {
      code: -32005,
      data: {
        code: "BLOCK_RANGE_TOO_LARGE",
        method: "debug_getModifiedAccountsByNumber",
        from,
        to,
        blocks: to - from + 1,
        refuseAbove,
      },
    },
  });

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: ETH_MAINNET });
    await anvil.rpc("anvil_mine", [hex(HEAD)]);
    node = await startRecordingNode(anvil.url);
    const options = {
      upstreams: { eth: [{ url: node.url, name: "node-0" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    };
    registry = await startGateway(options);
    deployment = await startGateway({
      ...options,
      blockRanges: { eth: { debug_getModifiedAccountsByNumber: { refuseAbove: 20 } } },
    });
    await everyNodeInRotation(registry);
    await everyNodeInRotation(deployment);
  });
  afterAll(async () => {
    await registry?.close();
    await deployment?.close();
    await node?.close();
    await anvil?.stop();
  });

  it("wider than the registry's 10 000 blocks, it is refused with the range's limits and no node is asked", async () => {
    node.calls.length = 0;
    for (const params of [
      [0, 10_000],
      [hex(0), hex(10_000)],
    ]) {
      const wide = await modified(registry, params);
      expect(wide.status, JSON.stringify(params)).toBe(413);
      expect(wide.json).toMatchObject(refusal(0, 10_000, 10_000));
    }
    // inside a batch that call alone is refused
    const batch = await registry.call("eth", `/${KEYS.dedicated}`, {
      method: "POST",
      body: JSON.stringify([
        { jsonrpc: "2.0", id: 1, method: "debug_getModifiedAccountsByNumber", params: [0, 10_000] },
        { jsonrpc: "2.0", id: 2, method: "eth_chainId", params: [] },
      ]),
      headers: { "content-type": "application/json" },
    });
    // in any order, as JSON-RPC 2.0 lets a batch's answers come
    const answers = batch.json as { id: number }[];
    expect([...answers].sort((a, b) => a.id - b.id)).toEqual([
      { jsonrpc: "2.0", id: 1, error: expect.objectContaining({ code: -32005 }) },
      { jsonrpc: "2.0", id: 2, result: "0x1" },
    ]);
    expect(asked()).toEqual([]);
  });

  it("(0, head) past a deployment's limit is refused; a narrow range and one block alone reach the node as sent", async () => {
    node.calls.length = 0;
    const whole = await modified(deployment, [0, HEAD]);
    expect(whole.status).toBe(413);
    expect(whole.json).toMatchObject(refusal(0, HEAD, 20));
    expect(asked()).toEqual([]);
    // one block alone is its parent to it (no end given), not a range to the head
    for (const params of [[HEAD - 10, HEAD], [5], [HEAD]]) {
      const narrow = await modified(deployment, params);
      // the node's own answer: anvil does not serve the method
      expect(narrow.json, JSON.stringify(params)).toMatchObject({ error: { code: -32601 } });
    }
    expect(asked()).toEqual([[HEAD - 10, HEAD], [5], [HEAD]]);
  });
});
