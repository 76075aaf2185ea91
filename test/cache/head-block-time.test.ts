import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint, Mount } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { HEIGHT, type NodeForMount, startNodeFor } from "../support/sdk-nodes.js";
import { nodeState } from "../support/software-node.js";

// What is read at the head is kept for half the time between the label's blocks, as the label has seen
// them (docs/cache.md): two Bitcoin Core nodes a block apart, read by the prober's first round within a
// millisecond, are no block a millisecond; with the cache's defaults, the head call is kept.

describe("two nodes a block apart at start, and the head's answers kept", () => {
  const endpoint = endpointsByLabel.get("btc") as Endpoint;
  const mount = endpoint.mounts[0] as Mount;
  let nodes: NodeForMount[];
  let gw: RunningGateway;

  beforeAll(async () => {
    nodes = [
      await startNodeFor(endpoint, mount, nodeState(endpoint, HEIGHT)),
      await startNodeFor(endpoint, mount, nodeState(endpoint, HEIGHT + 1)),
    ];
    gw = await startGateway({
      upstreams: { btc: nodes.map((n) => n.upstream) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: DEFAULT_CACHE,
    });
    await everyNodeInRotation(gw, "btc");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((n) => n.node.close()));
  });

  it("getblockcount is kept while the head stays: the first round's readings are not timed as blocks", async () => {
    const call = async () => {
      const answer = await gw.call("btc", `/${KEYS.all}`, {
        body: JSON.stringify({ jsonrpc: "1.0", id: "c", method: "getblockcount", params: [] }),
      });
      return { cache: answer.headers["x-cache"], result: (answer.json as { result: number }).result };
    };
    const first = await call();
    const second = await call();
    expect(first.result).toBe(HEIGHT + 1);
    expect(second).toEqual({ cache: "hit", result: HEIGHT + 1 });
    expect(gw.gateway.upstreams.group("btc", "/")?.served.blockMs).toBeUndefined();
  });
});
