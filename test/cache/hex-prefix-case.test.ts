import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// Hex digits in capitals are the same value to every EVM client, but a 0X prefix is not: geth reads it as
// 0x, while anvil and reth (alloy's FixedBytes) refuse an address or a hash so written, "invalid string
// length". A balance asked of a 0X address is another call than of the 0x one: the cache neither answers
// it with the 0x call's balance nor lets the 0x call wait on it and get its refusal.

/** anvil's first dev account, and the same address with geth's other prefix. */
const DEV = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const PREFIXED = `0X${DEV.slice(2)}`;
/** A final block (80 mined, anvil's finalized 64 below the head). */
const BLOCK = "0x3";

describe("a hash with a 0X prefix (real anvil)", () => {
  let node: Anvil;
  let recorder: RecordingNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startAnvil({ chainId: 1 });
    await node.rpc("anvil_mine", ["0x50"]);
    recorder = await startRecordingNode(node.url);
    gw = await startGateway({
      upstreams: { eth: [{ url: recorder.url, name: "a" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 5_000 },
    });
    await eventually(() => (gw.gateway.upstreams.group("eth", "/")?.finalized ?? -1) >= 0, 5_000, "finality");
  });
  afterAll(async () => {
    await gw?.close();
    await recorder?.close();
    await node?.stop();
    restore?.();
  });

  async function balance(address: string, id: number) {
    const answer = await gw.call("eth", `/${KEYS.all}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method: "eth_getBalance", params: [address, BLOCK] }),
    });
    const json = answer.json as { id: unknown; result?: string; error?: { message: string } };
    return { ...json, cache: answer.headers["x-cache"] };
  }
  const asked = (address: string) =>
    recorder.calls.filter((c) => c.method === "eth_getBalance" && (c.params as string[])[0] === address)
      .length;

  it("the 0x call asked while the 0X one is at the node gets its balance, not the node's refusal", async () => {
    // the node is slow to answer the 0X call
    recorder.answerLateMs = (call) =>
      call.method === "eth_getBalance" && (call.params as string[])[0] === PREFIXED ? 1_000 : 0;
    const odd = balance(PREFIXED, 1);
    await eventually(() => asked(PREFIXED) === 1, 4_000, "the 0X call at the node");
    const plain = await balance(DEV, 2);
    recorder.answerLateMs = undefined;
    expect(plain.error).toBeUndefined();
    expect(plain.result).toBe("0x21e19e0c9bab2400000");
    expect(plain.id).toBe(2);
    expect((await odd).error?.message).toBe("invalid string length");
  });

  it("nor is the 0X call answered from the cache with the 0x call's balance", async () => {
    // the balance at a final block is kept
    expect((await balance(DEV, 3)).cache).toBe("hit");
    const before = asked(PREFIXED);
    const odd = await balance(PREFIXED, 4);
    expect(odd.cache).not.toBe("hit");
    expect(odd.error?.message).toBe("invalid string length");
    expect(asked(PREFIXED)).toBe(before + 1);
  });
});
