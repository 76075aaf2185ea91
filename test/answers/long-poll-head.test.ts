import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { HEAD_ANSWERS } from "../support/typical-calls.js";

// A user's algosdk statusAfterBlock (GET /v2/status/wait-for-block-after/{round}) for a round already
// made answered last-round one below the /v2/status the gateway had just served: the long poll went round
// robin to the node behind. algod answers a round it is past at once with its own NodeStatus, the head
// call's answer (go-algorand handlers.go WaitForBlock: `ledger.Wait(round+1)` is closed at once, then
// `v2.GetStatus(ctx)`), so the route reads at the head (registry `reads.atHeadPaths`).

const algo = endpointsByLabel.get("algo") as Endpoint;
const H = 40_000_000;
const PAST = H - 5;

describe("algod long poll answers the node's status: it must never go below the head served (two nodes)", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;

  beforeAll(async () => {
    const status = HEAD_ANSWERS["GET /v2/status"];
    const answers = { [`GET /v2/status/wait-for-block-after/${PAST}`]: status as NonNullable<typeof status> };
    nodes = await Promise.all(
      [H + 1, H].map((height) =>
        startLoopbackNode(softwareNode(algo, nodeState(algo, height), [""], { answers })),
      ),
    );
    gw = await startGateway({
      upstreams: { algo: nodes.map((node, i) => ({ url: node.url, name: i === 0 ? "ahead" : "behind" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "algo");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("/v2/status says H+1; 20 statusAfterBlock(H-5) answers after it never say less", async () => {
    const head = await gw.call("algo", `/${KEYS.all}/v2/status`, { method: "GET" });
    expect(head.status).toBe(200);
    expect((head.json as Record<string, number>)["last-round"]).toBe(H + 1);
    const seen: number[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await gw.call("algo", `/${KEYS.all}/v2/status/wait-for-block-after/${PAST}`, {
        method: "GET",
      });
      expect(r.status, r.text).toBe(200);
      seen.push((r.json as Record<string, number>)["last-round"] as number);
    }
    expect(seen.filter((round) => round < H + 1)).toEqual([]);
  });
});
