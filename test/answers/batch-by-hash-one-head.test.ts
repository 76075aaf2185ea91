import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { substrateHash } from "../support/chain-answers.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { NodeRejection, type NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A batch that reads the head beside a read by hash of a block one node has not seen yet: the block is
// fresh (made since the last probe), so the batch may land on the node without it. The read by hash is
// asked again of the node that has the block; the batch's head read must come from that node too, or the
// caller is told, in one batch, a head below a block it was just given ("Batches: every call in a batch
// sees the same head").
const H = 20_000_000;
const dot = endpointsByLabel.get("dot") as Endpoint;

describe("dot: a batch of the best header and a fresh block's header by hash", () => {
  const states: NodeState[] = [nodeState(dot, H), nodeState(dot, H)];
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;
  beforeAll(async () => {
    for (const state of states) nodes.push(await startLoopbackNode(softwareNode(dot, () => state)));
    gw = await startGateway({
      upstreams: { dot: nodes.map((n, i) => ({ url: n.url, name: i === 0 ? "ahead" : "behind" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw, "dot", 4_000);
    // a block made on one node since the probes read both
    (states[0] as NodeState).height = H + 1;
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
  });

  it("the best header is never below the block the batch found by hash", async () => {
    const fresh = substrateHash(dot.chain, H + 1);
    const seen: string[] = [];
    for (let id = 1; id <= 8; id++) {
      const got = await gw.call("dot", `/${KEYS.all}/`, {
        body: JSON.stringify([
          { jsonrpc: "2.0", id: 1, method: "chain_getHeader", params: [] },
          { jsonrpc: "2.0", id: 2, method: "chain_getHeader", params: [fresh] },
        ]),
        headers: { "content-type": "application/json" },
      });
      const answers = got.json as { id: number; result: { number: string } | null }[];
      const best = answers.find((a) => a.id === 1)?.result?.number;
      const byHash = answers.find((a) => a.id === 2)?.result?.number ?? "null";
      seen.push(`${best} ${byHash}`);
    }
    const h1 = `0x${(H + 1).toString(16)}`;
    expect(seen).toEqual(seen.map(() => `${h1} ${h1}`));
  });
});

// Bitcoin Core: getblockheader of a hash it has not seen is -5 "Block not found"; a batch (bitcoin-core
// clients batch getblockcount with their reads) answers each call, 200.
const btc = endpointsByLabel.get("btc") as Endpoint;
const NEW = `${"00".repeat(4)}${"cd".repeat(28)}`;
describe("btc: a batch of getblockcount and a fresh block's header by hash", () => {
  const states: NodeState[] = [nodeState(btc, H), nodeState(btc, H)];
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;
  beforeAll(async () => {
    for (const state of states)
      nodes.push(
        await startLoopbackNode(
          softwareNode(btc, () => state, [""], {
            answers: {
              getblockheader: {
                result: (s, params) => {
                  if ((params as unknown[])[0] !== NEW || s.height < H + 1)
                    throw new NodeRejection(-5, "Block not found");
                  return { hash: NEW, height: H + 1, confirmations: s.height - H };
                },
              },
            },
          }),
        ),
      );
    gw = await startGateway({
      upstreams: { btc: nodes.map((n, i) => ({ url: n.url, name: i === 0 ? "ahead" : "behind" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw, "btc", 4_000);
    (states[0] as NodeState).height = H + 1;
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
  });

  it("the count is never below the height of the header the batch found", async () => {
    const seen: string[] = [];
    for (let i = 0; i < 8; i++) {
      const got = await gw.call("btc", `/${KEYS.all}/`, {
        body: JSON.stringify([
          { jsonrpc: "1.0", id: 1, method: "getblockcount", params: [] },
          { jsonrpc: "1.0", id: 2, method: "getblockheader", params: [NEW] },
        ]),
        headers: { "content-type": "text/plain" },
      });
      const answers = got.json as { id: number; result: unknown }[];
      const header = answers.find((a) => a.id === 2)?.result as { height?: number } | null;
      seen.push(`${answers.find((a) => a.id === 1)?.result} ${header?.height ?? "none"}`);
    }
    expect(seen).toEqual(seen.map(() => `${H + 1} ${H + 1}`));
  });
});

// A state read at a fresh block's hash: polkadot-sdk answers 4003 "UnknownBlock" on a node without it.
describe("dot: a batch of the best header and a state read at a fresh block's hash", () => {
  const states: NodeState[] = [nodeState(dot, H), nodeState(dot, H)];
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;
  const fresh = substrateHash(dot.chain, H + 1);
  beforeAll(async () => {
    for (const state of states)
      nodes.push(
        await startLoopbackNode(
          softwareNode(dot, () => state, [""], {
            answers: {
              state_getStorage: {
                result: (s, params) => {
                  if ((params as unknown[])[1] === fresh && s.height < H + 1)
                    throw new NodeRejection(
                      4003,
                      `Client error: UnknownBlock: Header was not found in the database: ${fresh}`,
                    );
                  return "0x01";
                },
              },
            },
          }),
        ),
      );
    gw = await startGateway({
      upstreams: { dot: nodes.map((n, i) => ({ url: n.url, name: i === 0 ? "ahead" : "behind" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw, "dot", 4_000);
    (states[0] as NodeState).height = H + 1;
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
  });

  it("the best header is never below the block the state was read at", async () => {
    const seen: string[] = [];
    for (let i = 0; i < 8; i++) {
      const got = await gw.call("dot", `/${KEYS.all}/`, {
        body: JSON.stringify([
          { jsonrpc: "2.0", id: 1, method: "chain_getHeader", params: [] },
          { jsonrpc: "2.0", id: 2, method: "state_getStorage", params: ["0x26aa", fresh] },
        ]),
        headers: { "content-type": "application/json" },
      });
      const answers = got.json as { id: number; result?: unknown; error?: unknown }[];
      const best = (answers.find((a) => a.id === 1)?.result as { number?: string } | undefined)?.number;
      const state = answers.find((a) => a.id === 2);
      seen.push(`${best} ${JSON.stringify(state?.result ?? state?.error)}`);
    }
    const h1 = `0x${(H + 1).toString(16)}`;
    expect(seen).toEqual(seen.map(() => `${h1} "0x01"`));
  });
});
