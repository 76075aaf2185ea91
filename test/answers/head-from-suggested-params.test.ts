import { Algodv2 } from "algosdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { sdkUrl, useTestHostsForGlobalFetch } from "../sdk/resolve.js";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// What a user saw: algosdk's status() answered round 1000, a round was made, getTransactionParams() gave
// firstValid 1001, and status() then answered 1000 again (its answer kept for the label's head). The
// suggested params' `last-round` is the node's head (algod's TransactionParams handler: LastRound =
// ledger.Latest()): the label's served head learns it (registry `heightInPaths`). algosdk's Algodv2,
// unmodified, against two algod loopback nodes behind `algo`, answer cache on.

const H = 46_000_000;

describe("algosdk: suggested params and status() across a new round", () => {
  const nodes: LoopbackNode[] = [];
  const states: NodeState[] = [];
  let gw: RunningGateway;
  let restore: () => Promise<void>;
  let algod: Algodv2;

  beforeAll(async () => {
    restore = useTestHostsForGlobalFetch();
    const endpoint = endpointsByLabel.get("algo") as Endpoint;
    for (let i = 0; i < 2; i++) {
      const state = nodeState(endpoint, H);
      states.push(state);
      nodes.push(await startLoopbackNode(softwareNode(endpoint, () => state, [""])));
    }
    gw = await startGateway({
      upstreams: { algo: nodes.map((n, i) => ({ url: n.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
    await everyNodeInRotation(gw);
    const url = new URL(sdkUrl(gw, "algo"));
    algod = new Algodv2("", `${url.protocol}//${url.hostname}${url.pathname}`, gw.port);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
    await restore?.();
  });

  it("status(), both nodes make a round, getTransactionParams() shows it, status() again", async () => {
    const seen = [Number((await algod.status().do()).lastRound)];
    for (const s of states) s.height = H + 1;
    seen.push(Number((await algod.getTransactionParams().do()).firstValid));
    seen.push(Number((await algod.status().do()).lastRound));
    expect(seen).toEqual([H, H + 1, H + 1]);
  });
});
