import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { NodeRejection } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// Bitcoin Core 28 reads that name a block by hash (rpc/txoutproof.cpp gettxoutproof, rpc/blockchain.cpp
// getdeploymentinfo): a node that has not seen the block answers -5 "Block not found" (HTTP 500 to a
// 1.0 call). The node a block behind has not seen the newest block; the other has. A caller that has the
// hash (from getbestblockhash, a ZMQ notification, another node) must get the block's answer.

const H = 870_000;
const btc = endpointsByLabel.get("btc") as Endpoint;
const NEW = `${"00".repeat(4)}${"ab".repeat(28)}`;
const TX = "ef".repeat(32);

const answers = (known: boolean): Readonly<Record<string, TypicalAnswer>> => ({
  gettxoutproof: {
    result: (_s, params) => {
      const p = params as unknown[];
      if (p[1] !== NEW || !known) throw new NodeRejection(-5, "Block not found");
      return "00000020abcd";
    },
  },
  getdeploymentinfo: {
    result: (_s, params) => {
      const p = params as unknown[];
      if (p[0] !== NEW || !known) throw new NodeRejection(-5, "Block not found");
      return { hash: NEW, height: H + 1, deployments: {} };
    },
  },
});

describe("Bitcoin Core reads by block hash, one node a block behind", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;
  beforeAll(async () => {
    for (const [h, known] of [
      [H + 1, true],
      [H, false],
    ] as const)
      nodes.push(
        await startLoopbackNode(softwareNode(btc, nodeState(btc, h), [""], { answers: answers(known) })),
      );
    gw = await startGateway({
      upstreams: { btc: nodes.map((n, i) => ({ url: n.url, name: i === 0 ? "ahead" : "behind" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, undefined, 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
  });

  const rpc = async (method: string, params: unknown[], id: number) => {
    const r = await gw.call("btc", `/${KEYS.all}/`, {
      body: JSON.stringify({ jsonrpc: "1.0", id, method, params }),
      headers: { "content-type": "text/plain" },
    });
    return `${r.status} ${r.text.trim()}`;
  };

  it("gettxoutproof([txid], blockhash) finds the block on the node that has it", async () => {
    const seen: string[] = [];
    for (let id = 1; id <= 6; id++) seen.push(await rpc("gettxoutproof", [[TX], NEW], id));
    expect(seen).toEqual(seen.map((_, i) => `200 {"result":"00000020abcd","error":null,"id":${i + 1}}`));
  });

  it("getdeploymentinfo(blockhash) finds the block on the node that has it", async () => {
    const seen: string[] = [];
    for (let id = 1; id <= 6; id++) seen.push(await rpc("getdeploymentinfo", [NEW], id));
    expect(seen.filter((s) => !s.startsWith("200 "))).toEqual([]);
  });
});

describe("Dogecoin Core 1.14 gettxoutproof by block hash, one node a block behind", () => {
  const doge = endpointsByLabel.get("doge") as Endpoint;
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;
  beforeAll(async () => {
    for (const [h, known] of [
      [H + 1, true],
      [H, false],
    ] as const)
      nodes.push(
        await startLoopbackNode(softwareNode(doge, nodeState(doge, h), [""], { answers: answers(known) })),
      );
    gw = await startGateway({
      upstreams: { doge: nodes.map((n, i) => ({ url: n.url, name: i === 0 ? "ahead" : "behind" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, undefined, 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
  });

  it("gettxoutproof([txid], blockhash) finds the block on the node that has it", async () => {
    const seen: string[] = [];
    for (let id = 1; id <= 6; id++) {
      const r = await gw.call("doge", `/${KEYS.all}/`, {
        body: JSON.stringify({ jsonrpc: "1.0", id, method: "gettxoutproof", params: [[TX], NEW] }),
        headers: { "content-type": "text/plain" },
      });
      seen.push(`${r.status} ${r.text.trim()}`);
    }
    expect(seen).toEqual(seen.map((_, i) => `200 {"result":"00000020abcd","error":null,"id":${i + 1}}`));
  });
});
