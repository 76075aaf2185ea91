import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { batchErrorBody } from "../../src/errors/respond.js";
import { GatewayError } from "../../src/errors/table.js";
import type { Endpoint } from "../../src/registry/types.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A batch with a call the gateway refuses on its own (a method the network does not serve) came back with
// the refusal after the node's answers: `[getblockcount, nope]` was answered `[getblockcount's, nope's]`
// the other way round. JSON-RPC 2.0 lets a client match answers by id, but a node answers in the order of
// the calls (geth, bitcoind), and clients read them so: the `bitcoin-core` npm client maps a batch's
// answers by position, so each call got another's result. Each answer is now in its call's place, on
// every path a partial batch takes: streamed whole from the node, answered call by call by the cache,
// refused whole by a later stage, and over a WebSocket.

const ids = (answer: unknown): unknown[] => (answer as { id: unknown }[]).map((a) => a.id);

describe("a partial batch's answers in the order of its calls", () => {
  let anvil: Anvil;
  let bitcoind: LoopbackNode;
  let cached: RunningGateway;
  let uncached: RunningGateway;
  let restore: () => void = () => {};

  beforeAll(async () => {
    restore = resolveTestHosts();
    const btc = endpointsByLabel.get("btc") as Endpoint;
    [anvil, bitcoind] = await Promise.all([
      startAnvil({ chainId: 1 }),
      startLoopbackNode(softwareNode(btc, nodeState(btc, 800_000))),
    ]);
    const upstreams = {
      eth: [{ url: anvil.url, name: "anvil" }],
      btc: [{ url: bitcoind.url, name: "core" }],
    };
    const health = { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 };
    [cached, uncached] = await Promise.all([
      startGateway({ upstreams, health }),
      startGateway({ upstreams, health, cache: { ...DEFAULT_CACHE, enabled: false } }),
    ]);
    await Promise.all([everyNodeInRotation(cached, "eth"), everyNodeInRotation(uncached, "eth")]);
    await Promise.all([everyNodeInRotation(cached, "btc"), everyNodeInRotation(uncached, "btc")]);
  }, 30_000);
  afterAll(async () => {
    await Promise.all([cached?.close(), uncached?.close()]);
    await Promise.all([anvil?.stop(), bitcoind?.close()]);
    restore();
  });

  const ethBatch = [
    { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] },
    { jsonrpc: "2.0", id: 2, method: "admin_peers", params: [] },
    // a notification that goes: no answer, no place
    { jsonrpc: "2.0", method: "eth_blockNumber", params: [] },
    { jsonrpc: "2.0", id: 3, method: "eth_blockNumber", params: [] },
    { jsonrpc: "2.0", id: 4, method: "no_suchMethod", params: [] },
    { jsonrpc: "2.0", id: 5, method: "eth_getBalance", params: [`0x${"11".repeat(20)}`, "latest"] },
  ];

  for (const [name, gateway] of [
    ["the cache on: answered call by call", () => cached],
    ["the cache off: the node's array merged", () => uncached],
  ] as const)
    it(`EVM, ${name}`, async () => {
      const answer = await gateway().call("eth", `/${KEYS.all}`, { body: JSON.stringify(ethBatch) });
      expect(answer.status).toBe(200);
      expect(ids(answer.json)).toEqual([1, 2, 3, 4, 5]);
      const [, refused, , unknown] = answer.json as { error?: { code: number } }[];
      expect(refused?.error).toBeDefined();
      expect(unknown?.error).toBeDefined();
    });

  it("Bitcoin-style 1.0 calls: the refusal first where it was sent first", async () => {
    const batch = [
      { jsonrpc: "1.0", id: "a", method: "nope", params: [] },
      { jsonrpc: "1.0", id: "b", method: "getblockcount", params: [] },
      { jsonrpc: "1.0", id: "c", method: "stop", params: [] },
      { jsonrpc: "1.0", id: "d", method: "getbestblockhash", params: [] },
    ];
    const answer = await uncached.call("btc", `/${KEYS.all}`, { body: JSON.stringify(batch) });
    expect(answer.status).toBe(200);
    expect(ids(answer.json)).toEqual(["a", "b", "c", "d"]);
    expect((answer.json as { result: unknown }[])[1]?.result).toBe(800_000);
  });

  it("over a WebSocket", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${uncached.port}/${KEYS.all}`);
    try {
      client.send(JSON.stringify(ethBatch));
      const text = await client.waitFor((t) => t.startsWith("["));
      expect(ids(JSON.parse(text))).toEqual([1, 2, 3, 4, 5]);
    } finally {
      client.close();
    }
  });

  it("refused whole by a later stage (a rate, a quota): each refusal kept in its place", () => {
    const layout = ['{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"x"}}', undefined, undefined];
    const body = batchErrorBody(
      new GatewayError("RATE_LIMITED", { retryAfter: 1 }),
      ['"b"', '"c"'],
      layout,
      undefined,
    );
    expect(ids(JSON.parse(body))).toEqual(["a", "b", "c"]);
    const middle = [undefined, '{"jsonrpc":"2.0","id":"b","error":{"code":-32601,"message":"x"}}', undefined];
    expect(
      ids(
        JSON.parse(
          batchErrorBody(
            new GatewayError("RATE_LIMITED", { retryAfter: 1 }),
            ['"a"', '"c"'],
            middle,
            undefined,
          ),
        ),
      ),
    ).toEqual(["a", "b", "c"]);
  });
});
