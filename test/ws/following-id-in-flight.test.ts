import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A client on a WebSocket sent eth_getBlockByHash with id 5 while another connection's identical call was
// at the node (its call waited on that one, coalesced), then eth_gasPrice with id 5 again: the second went
// to the node, and the client got two answers with id 5. docs/websocket.md: a call whose id is still
// waiting for its answer on the same connection is refused INVALID_REQUEST, a coalesced one's too.
const BLOCK = { number: "0x5", parentHash: `0x${"cd".repeat(32)}`, transactions: [] };

describe("an id waiting on another caller's identical call", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  let release: () => void = () => {};
  let held = Promise.resolve();
  const url = () => `ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`;
  const asked = (hash: string) =>
    node.connections
      .flatMap((c) => c.messages)
      .filter((m) => m.includes("eth_getBlockByHash") && m.includes(hash)).length;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(
      evmNode({
        eth_gasPrice: "0x3b9aca00",
        eth_getBlockByHash: ([hash]: [string]) => held.then(() => ({ ...BLOCK, hash })),
      }),
    );
    gw = await startGateway({ upstreams: { eth: [node.url] }, cache: { ...DEFAULT_CACHE, enabled: true } });
  });
  afterAll(async () => {
    release();
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("refuses a second call with the id of a call waiting on another's answer", async () => {
    const hash = `0x${"0a".repeat(32)}`;
    const [a, b] = await Promise.all([Client.open(url()), Client.open(url())]);
    held = new Promise((resolve) => {
      release = resolve;
    });
    a.ws.send(
      JSON.stringify({ jsonrpc: "2.0", id: "a", method: "eth_getBlockByHash", params: [hash, false] }),
    );
    await eventually(() => asked(hash) === 1, 2_000, "a's call at the node");
    b.ws.send(JSON.stringify({ jsonrpc: "2.0", id: 5, method: "eth_getBlockByHash", params: [hash, false] }));
    await eventually(
      async () => (await gw.metric("gateway_cache_waiting", { label: "eth" })) === 1,
      2_000,
      "b's call waiting",
    );
    b.ws.send(JSON.stringify({ jsonrpc: "2.0", id: 5, method: "eth_gasPrice", params: [] }));
    const first = JSON.parse(await b.waitFor((t) => t.includes('"id":5'))) as {
      result?: unknown;
      error?: { code: number };
    };
    release();
    await a.waitFor((t) => t.includes('"id":"a"'));
    await b.waitFor((t) => t.includes('"id":5') && t.includes('"result"'));
    // a later call's answer: an answer to the refused call, had it gone to the node, would have come first
    await b.call("eth_gasPrice", []);
    const withFive = b.received.filter((t) => t.includes('"id":5'));
    a.close();
    b.close();
    // the second call with id 5 is refused; the client gets exactly one result for id 5 (the block)
    expect(first.error?.code).toBe(-32600);
    expect(withFive.filter((t) => t.includes('"result"'))).toHaveLength(1);
  });
});
