import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { type RunningGateway, startGateway } from "./gateway.js";
import { type OgmiosNode, startOgmiosNode } from "./ogmios-ws-node.js";
import { everyNodeInRotation } from "./rotation.js";
import { nodeState } from "./software-node.js";
import { resolveTestHosts } from "./test-hosts.js";
import type { Client } from "./ws-client.js";

/** A gateway whose `ada` is one Ogmios node at `height`, its head answers kept a while (probes a minute apart). */
export interface OgmiosGateway {
  readonly node: OgmiosNode;
  readonly gw: RunningGateway;
  close(): Promise<void>;
}

export async function startOgmiosGateway(height: number): Promise<OgmiosGateway> {
  const restore = resolveTestHosts();
  const ada = endpointsByLabel.get("ada") as Endpoint;
  const node = await startOgmiosNode(ada, nodeState(ada, height));
  const gw = await startGateway({
    upstreams: { ada: [node.url] },
    health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    cache: { ...DEFAULT_CACHE, headMaxAgeMs: 30_000 },
  });
  await everyNodeInRotation(gw, "ada");
  return {
    node,
    gw,
    close: async () => {
      await gw.close();
      await node.close();
      restore();
    },
  };
}

export interface OgmiosAnswer {
  readonly result?: unknown;
  readonly error?: { code: number; message: string };
}

/** Calls on a socket, each answer found by its top-level id (an Ogmios point has an `id` of its own). */
export function ogmiosAsker(): (client: Client, method: string, params?: unknown) => Promise<OgmiosAnswer> {
  let nextId = 1;
  return async (client, method, params = {}) => {
    const id = nextId++;
    client.send(JSON.stringify({ jsonrpc: "2.0", method, params, id }));
    const text = await client.waitFor((t) => (JSON.parse(t) as { id?: unknown }).id === id);
    return JSON.parse(text) as OgmiosAnswer;
  };
}
