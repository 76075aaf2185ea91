import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Anvil } from "../support/anvil.js";
import {
  EMITTER,
  GENESIS,
  mineEmitterCall,
  signedEmitterCall,
  startSameChainPair,
} from "../support/emitter-chain.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";
import { pushedTo, startWsRelay } from "../support/ws-relay.js";

// A connection moved to another node asks it for the logs its client missed with eth_getLogs from the last
// log sent (or the block it subscribed at) to the new node's head (docs/websocket.md). For a filter whose
// logs are rare that range is as old as the last one: thousands of blocks. Nodes cap a log query's range:
// Reth's `--rpc.max-blocks-per-filter` (100 000 by default) answers -32602 "query exceeds max block range
// N" when `to - from > N` (paradigmxyz/reth crates/rpc/rpc/src/eth/filter.rs `get_logs_in_block_range`),
// Besu's `--rpc-max-logs-range` (5000) -32005 "Requested range exceeds maximum RPC range limit"
// (/work/shared/reference/answer-consistency.md). The gateway took that error for "no logs": the logs of
// the gap were never sent. It now asks the gap in pieces no wider than the label's `splitAbove` (the
// registry's 2000, or the deployment's `blockRanges`), as it splits a caller's range. Two real anvils on one
// chain; `b`'s WebSocket reaches the gateway through a relay of this test's own that answers as a Reth run
// with `--rpc.max-blocks-per-filter 100`, and the deployment splits above 50 (mining thousands of blocks
// takes anvil too long for a test).

const RETH_MAX_BLOCKS_PER_FILTER = 100;

/** A WebSocket relay to `target` whose eth_getLogs over a range wider than Reth's cap is refused as Reth does. */
async function startCappedRelay(target: string) {
  /** The widths of the gateway's own eth_getLogs calls, in blocks. */
  const widths: number[] = [];
  const relay = await startWsRelay(target, {
    fromGateway: (call, _text, link) => {
      if (call.method !== "eth_getLogs") return false;
      const filter = call.params?.[0] as { fromBlock?: string; toBlock?: string };
      const from = Number(filter.fromBlock);
      const to = Number(filter.toBlock);
      if (String(call.id).startsWith("gateway-")) widths.push(to - from + 1);
      if (to - from <= RETH_MAX_BLOCKS_PER_FILTER) return false;
      link.reply(
        JSON.stringify({
          jsonrpc: "2.0",
          id: call.id,
          error: { code: -32602, message: `query exceeds max block range ${RETH_MAX_BLOCKS_PER_FILTER}` },
        }),
      );
      return true;
    },
  });
  return { ...relay, widths };
}

describe("a connection moved across a gap wider than the new node's log range cap", () => {
  let a: Anvil;
  let b: Anvil;
  let relay: Awaited<ReturnType<typeof startCappedRelay>>;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
  });
  beforeEach(async () => {
    await gw?.close();
    await Promise.all([a?.stop(), b?.stop(), relay?.close()]);
    [a, b] = await startSameChainPair();
    relay = await startCappedRelay(`ws://127.0.0.1:${b.port}`);
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, name: "a" },
          { url: b.url, ws: relay.url, name: "b", tier: "fallback" },
        ],
      },
      blockRanges: { eth: { eth_getLogs: { splitAbove: 50 } } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.stop(), b?.stop(), relay?.close()]);
    restore?.();
  });

  it("sends the gap's logs, asked in pieces no wider than splitAbove", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      const id = (await client.call("eth_subscribe", ["logs", { address: EMITTER }])).result;
      const logBlocks = () => pushedTo(client, id).map((log) => Number(log.blockNumber));
      await mineEmitterCall([a, b], { time: GENESIS + 12, nonce: 0 });
      await eventually(() => logBlocks().length === 1, 5_000, "block 1's log");
      // b alone, in one call: a log in block 2, then empty blocks to 151
      await b.rpc("eth_sendRawTransaction", [await signedEmitterCall(1)]);
      await b.rpc("anvil_mine", ["0x96", "0x1"]);
      await a.kill("SIGKILL");
      await eventually(
        async () =>
          (await gw.metric("gateway_websocket_moves_total", { label: "eth", outcome: "moved" })) >= 1,
        5_000,
        "the connection on b",
      );
      await mineEmitterCall([b], { time: GENESIS + 100_000, nonce: 2 });
      await eventually(() => logBlocks().includes(152), 10_000, "block 152's log");
      expect(logBlocks()).toEqual([1, 2, 152]);
      expect(Math.max(...relay.widths)).toBeLessThanOrEqual(50);
    } finally {
      client.close();
    }
  });
});
