import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// Bitcoin Core 28 answers a JSON-RPC 2.0 call's errors at HTTP 200 (bitcoin/bitcoin#27101; src/httprpc.cpp
// HTTPReq_JSONRPC catches them for a V2 request), among them -28 RPC_IN_WARMUP "Loading block index…" from
// a node that restarted. The registry names -28, -9 and -10 a node unable to serve (bitcoin's
// `unavailableCodes`) at 500 and, for 2.0 calls, at 200 (`unavailableAlsoAt`): such a small answer is read
// whole (call-run.ts `holds`) and the call goes to another node, as the same node's -28 to a 1.0 call
// (HTTP 500) does. It was relayed to the caller as the answer, and the node not counted as failing.

const btc = endpointsByLabel.get("btc") as Endpoint;
const HEIGHT = 800_000;

describe("Bitcoin Core 28 loading its block index between two probes", () => {
  const states: NodeState[] = [nodeState(btc, HEIGHT), nodeState(btc, HEIGHT)];
  let nodes: LoopbackNode[];
  let gw: RunningGateway;

  beforeAll(async () => {
    nodes = await Promise.all(states.map((state) => startLoopbackNode(softwareNode(btc, () => state))));
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

  it("a node that started loading its block index (-28 at HTTP 200) is not the answer: the other node is", async () => {
    // n1 restarts between two probes: bitcoind answers -28 "Loading block index…" until it has loaded
    // (RPC_IN_WARMUP), in 2.0's shape at HTTP 200. The registry names -28 a node unable to serve
    // (bitcoin's unavailableCodes), which a 1.0 call sees at HTTP 500 and the gateway takes as the node
    // failing; the same node answering a 2.0 call must be no different.
    (states[1] as NodeState).mode = "failing";
    try {
      for (let id = 1; id <= 6; id++) {
        const r = await call(`{"jsonrpc":"2.0","id":${id},"method":"getblockcount"}`);
        expect(r.status, r.text).toBe(200);
        expect(r.json, r.text).toEqual({ jsonrpc: "2.0", result: HEIGHT, id });
      }
    } finally {
      (states[1] as NodeState).mode = "serving";
    }
  });

  it("the same node loading, for 1.0 calls (-28 at HTTP 500): the other node answers", async () => {
    (states[1] as NodeState).mode = "failing";
    try {
      for (let id = 1; id <= 6; id++) {
        const r = await call(`{"jsonrpc":"1.0","id":${id},"method":"getblockcount"}`);
        expect(r.status, r.text).toBe(200);
        expect(r.json, r.text).toEqual({ result: HEIGHT, error: null, id });
      }
    } finally {
      (states[1] as NodeState).mode = "serving";
    }
  });
});
