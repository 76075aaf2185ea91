import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A bitcoind that restarted answers every call -28 RPC_IN_WARMUP "Loading block index…" until it has
// loaded (src/rpc/server.cpp CRPCTable::execute throws it before the method runs). To a batch it answers
// HTTP 200 with that error in each call's place (src/httprpc.cpp HTTPReq_JSONRPC: "Batches never throw
// HTTP errors, they are always just included in "HTTP OK" responses"; Dogecoin Core 1.14's
// JSONRPCExecBatch alike). The registry names -28 a node unable to serve (`unavailableCodes`): a single
// call so answered goes to another node (bitcoind-v28-loading.test.ts); a batch must too, and not come
// back to the caller as an array of -28s while the other node is at the head.

const HEIGHT = 800_000;

for (const label of ["btc", "doge"]) {
  const endpoint = endpointsByLabel.get(label) as Endpoint;
  describe(`${label}: a node loading its block index between two probes, asked a batch`, () => {
    const states: NodeState[] = [nodeState(endpoint, HEIGHT), nodeState(endpoint, HEIGHT)];
    let nodes: LoopbackNode[];
    let gw: RunningGateway;

    beforeAll(async () => {
      nodes = await Promise.all(
        states.map((state) => startLoopbackNode(softwareNode(endpoint, () => state))),
      );
      gw = await startGateway({
        upstreams: { [label]: nodes.map((node, i) => ({ url: node.url, name: `n${i}` })) },
        // probes once at the start: what a node says between probes is what the calls see
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      });
      await everyNodeInRotation(gw);
    });
    afterAll(async () => {
      await gw?.close();
      await Promise.all((nodes ?? []).map((node) => node.close()));
    });

    it("a 1.0 batch gets the other node's answers, never the loading node's -28s", async () => {
      (states[1] as NodeState).mode = "failing";
      try {
        const seen: string[] = [];
        for (let id = 1; id <= 6; id++) {
          const r = await gw.call(label, `/${KEYS.all}/`, {
            body: `[{"jsonrpc":"1.0","id":${id},"method":"getblockcount","params":[]},{"jsonrpc":"1.0","id":"b${id}","method":"getblockcount","params":[]}]`,
          });
          seen.push(`${r.status} ${r.text.trim()}`);
        }
        expect(seen).toEqual(
          seen.map(
            (_, i) =>
              `200 [{"result":${HEIGHT},"error":null,"id":${i + 1}},{"result":${HEIGHT},"error":null,"id":"b${i + 1}"}]`,
          ),
        );
      } finally {
        (states[1] as NodeState).mode = "serving";
      }
    });
  });
}
