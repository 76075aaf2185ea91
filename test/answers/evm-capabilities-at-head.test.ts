import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS } from "../support/gateway.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";

// geth's eth_capabilities (execution-apis#755; go-ethereum internal/ethapi capabilities.go: Capabilities
// reads CurrentHeader and answers it as `head` {number, hash} beside the oldest block of each kind of history
// it serves, a full node's state a window of TriesInMemory, 128 blocks, back from that head). It names no
// block and went to any node: behind two nodes a block apart, a caller that read the head with
// eth_blockNumber was told an older head by it, and one that read it first then asked eth_blockNumber was
// told a head below the one it had seen.

const H = 20_000_000;
const hex = (n: number) => `0x${n.toString(16)}`;
const hash = (n: number) => `0x${n.toString(16).padStart(64, "a")}`;

/** geth's answer as a full node at `height` with its default retention (state 128 blocks, the rest whole). */
function capabilities(height: number) {
  const window = (blocks: number) => ({
    disabled: false,
    oldestBlock: hex(Math.max(0, height + 1 - blocks)),
    deleteStrategy: { type: "window", retentionBlocks: hex(blocks) },
  });
  const whole = { disabled: false, oldestBlock: "0x0" };
  return {
    head: { number: hex(height), hash: hash(height) },
    state: window(128),
    tx: window(2_350_000),
    logs: window(2_350_000),
    receipts: whole,
    blocks: whole,
    stateproofs: window(128),
  };
}

describe("eth_capabilities behind two nodes one block apart", () => {
  let apart: NodesBlockApart;
  beforeAll(async () => {
    apart = await nodesBlockApart(
      "eth",
      H,
      softwareWith({ eth_capabilities: { result: ({ height }) => capabilities(height) } }),
    );
  });
  afterAll(async () => apart?.close());

  const rpc = async (method: string, id: number) => {
    const got = await apart.gw.call("eth", `/${KEYS.all}/`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params: [] }),
      headers: { "content-type": "application/json" },
    });
    return (got.json as { result?: unknown }).result;
  };
  const headOf = (answer: unknown) => (answer as { head?: { number?: string } } | undefined)?.head?.number;

  it("after eth_blockNumber it names that head, never the one before", async () => {
    const seen: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      expect(await rpc("eth_blockNumber", i)).toBe(hex(H + 1));
      seen.push(headOf(await rpc("eth_capabilities", i)));
    }
    expect(seen).toEqual(seen.map(() => hex(H + 1)));
  });

  it("the head it names is one eth_blockNumber never goes below", async () => {
    const seen: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      expect(headOf(await rpc("eth_capabilities", i))).toBe(hex(H + 1));
      seen.push(await rpc("eth_blockNumber", i));
    }
    expect(seen).toEqual(seen.map(() => hex(H + 1)));
  });
});
