import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A batch of a write, a read and a call the gateway refuses itself goes to the node as a partial batch
// (pending-calls.ts holdRefusals: the refusal waits to be merged into the node's answer). The node's socket
// is lost before it answers: the connection moves (move.ts #sendAgain), answers the write WRITE_NOT_CONFIRMED
// and sends the read again: its refusals were held in a second partial-batch entry beside the first, so the
// write's answer never came and rode on the next batch that reused an id (JSON-RPC 2.0 §6: one answer per
// call with an id).
const never = () => new Promise(() => {});

describe("a partial batch in flight when its node's socket is lost", () => {
  let a: LoopbackWsNode;
  let b: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  beforeAll(async () => {
    restore = resolveTestHosts();
    a = await startLoopbackWsNode(
      evmNode({ eth_sendRawTransaction: never, eth_call: never, eth_blockNumber: "0x10" }),
    );
    b = await startLoopbackWsNode(
      evmNode({ eth_sendRawTransaction: never, eth_call: "0xb", eth_blockNumber: "0x10" }),
    );
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, ws: a.wsUrl, name: "a" },
          { url: b.url, ws: b.wsUrl, name: "b" },
        ],
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await a?.close();
    await b?.close();
    restore?.();
  });

  it("answers every call of the batch once, and nothing of it leaks into a later answer", async () => {
    const c = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const onA = a.openConnections() === 1 ? a : b;
    const batch = [
      { jsonrpc: "2.0", id: 1, method: "eth_sendRawTransaction", params: ["0x02f8"] },
      {
        jsonrpc: "2.0",
        id: 2,
        method: "eth_call",
        params: [{ to: "0x0000000000000000000000000000000000000001" }, "latest"],
      },
      { jsonrpc: "2.0", id: 3, method: "no_suchMethod", params: [] },
    ];
    c.send(JSON.stringify(batch));
    await eventually(() => onA.latest().messages.length > 0, 3_000, "the batch at its node");
    // the node's socket dies before it answers: the connection moves
    onA.latest().socket.terminate();
    const first = await c.waitFor((t) => t.trimStart().startsWith("["), 3_000);
    const firstIds = (JSON.parse(first) as { id: number }[]).map((m) => m.id).sort();
    // a later call reusing id 2 (viem and ethers number each socket's calls; many clients reuse ids)
    const from = c.received.length;
    c.send(JSON.stringify([{ jsonrpc: "2.0", id: 2, method: "eth_blockNumber", params: [] }]));
    const second = await c.waitFor(() => true, 3_000, from);
    expect(firstIds).toEqual([1, 2, 3]);
    expect((JSON.parse(second) as { id: number }[]).map((m) => m.id)).toEqual([2]);
    c.ws.close();
  }, 20_000);
});
