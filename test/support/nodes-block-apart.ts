import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { type RunningGateway, startGateway } from "./gateway.js";
import { type LoopbackNode, type Responder, startLoopbackNode } from "./loopback-node.js";
import { everyNodeInRotation } from "./rotation.js";
import { nodeState, softwareNode } from "./software-node.js";
import type { TypicalAnswer } from "./typical-calls.js";

/** Two nodes of a label a block apart behind a gateway, and the way to stop them all. */
export interface NodesBlockApart {
  /** `ahead` (at height + 1), then `behind` (at height). */
  readonly nodes: readonly LoopbackNode[];
  readonly gw: RunningGateway;
  close(): Promise<void>;
}

/**
 * Two loopback nodes of `label`'s software, `ahead` at `height` + 1 and `behind` at `height`, both in rotation
 * behind a gateway with the cache on and probes every 100 ms: a caller who saw the head from the one ahead
 * must never be answered by the one behind for what only the head block holds.
 */
export async function nodesBlockApart(
  label: string,
  height: number,
  node: (endpoint: Endpoint, height: number) => Responder,
): Promise<NodesBlockApart> {
  const endpoint = endpointsByLabel.get(label) as Endpoint;
  const nodes = await Promise.all([height + 1, height].map((h) => startLoopbackNode(node(endpoint, h))));
  const gw = await startGateway({
    upstreams: { [label]: nodes.map((n, i) => ({ url: n.url, name: i === 0 ? "ahead" : "behind" })) },
    health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    cache: { ...DEFAULT_CACHE, enabled: true },
  });
  await everyNodeInRotation(gw, label, 4_000);
  return {
    nodes,
    gw,
    close: async () => {
      await gw.close();
      await Promise.all(nodes.map((n) => n.close()));
    },
  };
}

/** A node of the label's software at a height, answering `answers` beyond its typical calls. */
export function softwareWith(answers: Readonly<Record<string, TypicalAnswer>>) {
  return (endpoint: Endpoint, height: number): Responder =>
    softwareNode(endpoint, nodeState(endpoint, height), [""], { answers });
}
