import { RpcClient } from "@taquito/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { sdkUrl } from "../sdk/resolve.js";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { HEAD_ANSWERS, type TypicalAnswer } from "../support/typical-calls.js";

// What a user saw: @taquito/rpc read the head's header (level 1000), a block was made, getBlock() showed
// level 1001, and getBlockHeader() then answered 1000 again (its answer kept for the label's head); with the
// two nodes a block apart, getBlock() and getBlockHeader() in turn went back and forth. Octez's block answer
// holds its header ({protocol, chain_id, hash, header: {level, …}, metadata, operations}): read at the head,
// its level teaches the label's served head (registry `heightInPaths`), while a block by level still goes
// only to a node that has reached it. @taquito/rpc, unmodified, against two Octez loopback nodes behind
// `xtz`, answer cache on.

const H = 7_000_000;
const header = TYPICAL("GET /chains/main/blocks/head/header");
function TYPICAL(key: string): TypicalAnswer {
  return HEAD_ANSWERS[key] as TypicalAnswer;
}

const EXTRA: Readonly<Record<string, TypicalAnswer>> = {
  "GET /chains/main/blocks/head": {
    result: (state) => {
      const h = header.result(state) as Record<string, unknown>;
      const { protocol, chain_id, hash, ...shell } = h;
      return { protocol, chain_id, hash, header: shell, metadata: {}, operations: [[], [], [], []] };
    },
  },
};

/** Two Octez loopback nodes at H behind `xtz`, a gateway before them, and taquito's client of it. */
function twoOctezNodes(): { readonly states: NodeState[]; rpc: () => RpcClient } {
  const nodes: LoopbackNode[] = [];
  const states: NodeState[] = [];
  let gw: RunningGateway;
  let restore: () => void;
  let client: RpcClient;

  beforeAll(async () => {
    restore = resolveTestHosts();
    const endpoint = endpointsByLabel.get("xtz") as Endpoint;
    for (let i = 0; i < 2; i++) {
      const state = nodeState(endpoint, H);
      states.push(state);
      nodes.push(await startLoopbackNode(softwareNode(endpoint, () => state, [""], { answers: EXTRA })));
    }
    gw = await startGateway({
      upstreams: { xtz: nodes.map((n, i) => ({ url: n.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
    await everyNodeInRotation(gw);
    client = new RpcClient(sdkUrl(gw, "xtz"));
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
    restore?.();
  });
  return { states, rpc: () => client };
}

describe("taquito: the head read by getBlock() teaches the served head", () => {
  const { states, rpc } = twoOctezNodes();

  it("getBlockHeader(), both nodes make a block, getBlock() shows it, getBlockHeader() again", async () => {
    const seen = [(await rpc().getBlockHeader()).level];
    for (const s of states) s.height = H + 1;
    seen.push((await rpc().getBlock()).header.level);
    seen.push((await rpc().getBlockHeader()).level);
    expect(seen).toEqual([H, H + 1, H + 1]);
  });
});

describe("taquito: two Octez nodes one block apart, between two probes", () => {
  const { states, rpc } = twoOctezNodes();

  it("getBlock() and getBlockHeader() in turn never show the head going back", async () => {
    (states[0] as NodeState).height = H + 1;
    const seen: number[] = [];
    for (let i = 0; i < 10; i++) {
      seen.push((await rpc().getBlock()).header.level);
      seen.push((await rpc().getBlockHeader()).level);
    }
    const back = seen.filter((h, i) => i > 0 && h < (seen[i - 1] as number));
    expect(back, seen.join(" ")).toEqual([]);
  });
});
