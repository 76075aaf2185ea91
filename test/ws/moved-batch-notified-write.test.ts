import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode, waitUntil } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A user's batch over a WebSocket held a write sent as a notification (no id: fire and forget, JSON-RPC 2.0
// §4.1) beside a read; its node was lost before it answered, and the new node got the whole batch again, the
// write with it: the write was sent to two nodes. A write is never sent twice (docs/websocket.md: a move sends
// again every call in flight "all but writes"): the new node gets the read alone.
describe("a WebSocket batch with a write sent as a notification, when its node is lost", () => {
  let a: LoopbackWsNode;
  let b: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  const never = () => new Promise(() => {});

  beforeAll(async () => {
    restore = resolveTestHosts();
    a = await startLoopbackWsNode(evmNode({ eth_sendRawTransaction: never, eth_getBalance: never }));
    b = await startLoopbackWsNode(evmNode({ eth_getBalance: "0x2a", eth_sendRawTransaction: "0xfeed" }));
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b", tier: "fallback" },
        ],
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.close(), b?.close()]);
    restore?.();
  });

  it("the read is sent again on the new node, the write is not", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    client.send(
      '[{"jsonrpc":"2.0","method":"eth_sendRawTransaction","params":["0x02f8"]},' +
        '{"jsonrpc":"2.0","id":"read","method":"eth_getBalance","params":["0x00000000000000000000000000000000000000aa","latest"]}]',
    );
    await waitUntil(() => a.methods().includes("eth_getBalance"), 3_000, "the batch at a");
    expect(a.methods()).toContain("eth_sendRawTransaction");
    await a.close();
    // the read is answered by b
    const answer = await client.waitFor((t) => t.includes('"read"'), 5_000);
    expect(JSON.parse(answer)).toEqual([{ jsonrpc: "2.0", id: "read", result: "0x2a" }]);
    // the write went to a already: b must never get it
    expect(b.methods()).toContain("eth_getBalance");
    expect(b.methods()).not.toContain("eth_sendRawTransaction");
    client.close();
  });
});
