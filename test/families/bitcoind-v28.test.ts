import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { NodeRejection, type NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// Bitcoin Core v28 answers a call marked "jsonrpc": "2.0" in 2.0's shape (bitcoin/bitcoin#27101): no
// `error` beside a result, its errors at HTTP 200, a notification (no id) with HTTP 204 and no body; a 1.0
// call (no member, or "1.0") as before: both members, errors at HTTP 500 (404 for an unknown method). The
// loopback Bitcoin Core (node-software.ts bitcoind28) answers so; these read it directly, then through
// the gateway.

const btc = endpointsByLabel.get("btc") as Endpoint;
const HEIGHT = 800_000;
const HASH = `${"00".repeat(4)}${"ab".repeat(28)}`;

/** getblock: the block named by HASH, on a node that has it; -5 "Block not found" (rpc/blockchain.cpp) on one that has not. */
const getblock = (known: boolean): TypicalAnswer => ({
  result: (_state, params) => {
    const hash = Array.isArray(params) ? params[0] : (params as { blockhash?: unknown }).blockhash;
    if (!known || hash !== HASH) throw new NodeRejection(-5, "Block not found");
    return { hash: HASH, height: HEIGHT + 1 };
  },
});

async function post(node: LoopbackNode, body: string): Promise<{ status: number; text: string }> {
  const r = await fetch(node.url, { method: "POST", body, headers: { "content-type": "application/json" } });
  return { status: r.status, text: await r.text() };
}

describe("the loopback Bitcoin Core 28 answers as bitcoind 28 does (src/httprpc.cpp, src/rpc/request.cpp)", () => {
  let node: LoopbackNode;
  beforeAll(async () => {
    node = await startLoopbackNode(softwareNode(btc, nodeState(btc, HEIGHT)));
  });
  afterAll(async () => {
    await node?.close();
  });

  it("a 2.0 call: jsonrpc, then result or error alone; its error at HTTP 200", async () => {
    expect(await post(node, '{"jsonrpc":"2.0","id":1,"method":"getblockcount"}')).toEqual({
      status: 200,
      text: `{"jsonrpc":"2.0","result":${HEIGHT},"id":1}\n`,
    });
    expect(await post(node, '{"jsonrpc":"2.0","id":2,"method":"nosuchmethod"}')).toEqual({
      status: 200,
      text: '{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":2}\n',
    });
  });

  it('a 1.0 call (no member, or "1.0"): both members; an unknown method at HTTP 404', async () => {
    expect(await post(node, '{"id":1,"method":"getblockcount"}')).toEqual({
      status: 200,
      text: `{"result":${HEIGHT},"error":null,"id":1}\n`,
    });
    expect(await post(node, '{"jsonrpc":"1.0","id":2,"method":"nosuchmethod"}')).toEqual({
      status: 404,
      text: '{"result":null,"error":{"code":-32601,"message":"Method not found"},"id":2}\n',
    });
    // without an id, the answer has none (the id is a std::optional since v28)
    expect(await post(node, '{"method":"getblockcount"}')).toEqual({
      status: 200,
      text: `{"result":${HEIGHT},"error":null}\n`,
    });
  });

  it("a jsonrpc member that is no version it speaks: RPC_INVALID_REQUEST in 1.0's shape at HTTP 400", async () => {
    expect(await post(node, '{"jsonrpc":2,"id":1,"method":"getblockcount"}')).toEqual({
      status: 400,
      text: '{"result":null,"error":{"code":-32600,"message":"jsonrpc field must be a string"},"id":1}\n',
    });
    expect(await post(node, '{"jsonrpc":"3.0","method":"getblockcount"}')).toEqual({
      status: 400,
      text: '{"result":null,"error":{"code":-32600,"message":"JSON-RPC version not supported"}}\n',
    });
  });

  it("a 2.0 notification: HTTP 204, no body; a batch: each call in its own version's shape, notifications left out", async () => {
    const notification = await post(node, '{"jsonrpc":"2.0","method":"getblockcount"}');
    expect(notification).toEqual({ status: 204, text: "" });
    const batch = await post(
      node,
      '[{"jsonrpc":"2.0","id":1,"method":"getblockcount"},{"id":2,"method":"nosuchmethod"},' +
        '{"jsonrpc":"2.0","method":"getblockcount"},{"jsonrpc":"2.0","id":3,"method":"nosuchmethod"}]',
    );
    expect(batch.status).toBe(200);
    expect(JSON.parse(batch.text)).toEqual([
      { jsonrpc: "2.0", result: HEIGHT, id: 1 },
      { result: null, error: { code: -32601, message: "Method not found" }, id: 2 },
      { jsonrpc: "2.0", error: { code: -32601, message: "Method not found" }, id: 3 },
    ]);
    expect(await post(node, '[{"jsonrpc":"2.0","method":"getblockcount"}]')).toEqual({
      status: 204,
      text: "",
    });
    expect(await post(node, "[]")).toEqual({ status: 200, text: "[]\n" });
  });
});

describe("the gateway in front of Bitcoin Core 28, for 2.0 calls", () => {
  const states: NodeState[] = [nodeState(btc, HEIGHT), nodeState(btc, HEIGHT)];
  let nodes: LoopbackNode[];
  let gw: RunningGateway;

  beforeAll(async () => {
    nodes = await Promise.all(
      states.map((state, i) =>
        startLoopbackNode(softwareNode(btc, () => state, [""], { answers: { getblock: getblock(i === 0) } })),
      ),
    );
    gw = await startGateway({
      upstreams: { btc: nodes.map((node, i) => ({ url: node.url, name: `n${i}` })) },
      // probes once at the start: what a node says between probes is what the calls see
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  const call = (body: string) => gw.call("btc", `/${KEYS.all}/`, { body });

  it("relays a result in 2.0's shape, with no error member beside it", async () => {
    const r = await call('{"jsonrpc":"2.0","id":5,"method":"getblockcount"}');
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual({ jsonrpc: "2.0", result: HEIGHT, id: 5 });
  });

  it("finds a block by hash one node has not seen, though its -5 comes at HTTP 200", async () => {
    for (let id = 1; id <= 6; id++) {
      const r = await call(`{"jsonrpc":"2.0","id":${id},"method":"getblock","params":["${HASH}"]}`);
      expect(r.status, r.text).toBe(200);
      expect(r.json).toMatchObject({ result: { height: HEIGHT + 1 }, id });
    }
  });

  it("a 2.0 notification is run and answered as bitcoind answers it: HTTP 204, no body", async () => {
    const r = await call('{"jsonrpc":"2.0","method":"getblockcount"}');
    expect(r.status, r.text).toBe(204);
    expect(r.text).toBe("");
  });
});
