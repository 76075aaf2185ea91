import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint, Mount } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import { HEIGHT, type NodeForMount, startNodeFor } from "../support/sdk-nodes.js";
import { nodeState } from "../support/software-node.js";

// A finalized height learned in two calls (registry `cache.finalized.heightBy`: GRANDPA's finalized head, a
// hash, then its header): a node that names no finalized block (`null`) gives no finalized height. Sent on
// as a param, null would have asked chain_getHeader for the best block, and every block up to the head would
// have been kept as final.

const dot = endpointsByLabel.get("dot") as Endpoint;
const mount = dot.mounts[0] as Mount;

describe("a finalized head of null", () => {
  let gw: RunningGateway;
  let node: NodeForMount;

  beforeAll(async () => {
    node = await startNodeFor(dot, mount, nodeState(dot, HEIGHT), {
      chain_getFinalizedHead: { result: () => null },
    });
    gw = await startGateway({
      upstreams: { dot: [node.upstream] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 50 },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.node.close();
  });

  it("is no finalized height, and no header is asked for it", async () => {
    const asked = (method: string) => node.node.requests.filter((r) => r.body.includes(`"${method}"`));
    await eventually(() => asked("chain_getFinalizedHead").length >= 3, 3_000, "three finality probes");
    expect(gw.gateway.upstreams.group("dot", mount.path)?.finalized).toBe(-1);
    expect(asked("chain_getHeader").filter((r) => r.body.includes("null"))).toEqual([]);
  });
});
