import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A new WebSocket connection keeps the node it opens on (docs/upstreams.md, "Answers across nodes"): it
// must open on one that has reached the head the label served, or the first head it reads is behind one
// the caller read over HTTP a moment before. Stellar RPC's WebSocket is bridged over HTTP to one node; a
// node one ledger ahead and one behind.
const HEAD = 5_000_000;

describe("a new WebSocket connection opens on a node at the served head (xlm, bridged over HTTP)", () => {
  const xlm = endpointsByLabel.get("xlm");
  if (xlm === undefined) throw new Error("no xlm in the registry");
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    nodes = await Promise.all(
      [HEAD + 1, HEAD].map((h) => startLoopbackNode(softwareNode(xlm, nodeState(xlm, h)))),
    );
    gw = await startGateway({
      upstreams: { xlm: nodes.map((node, i) => ({ url: node.url, name: i === 0 ? "ahead" : "behind" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "xlm");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes?.map((node) => node.close()) ?? []);
    restore?.();
  });

  it("never reads a ledger below the one HTTP served, on any of ten fresh connections", async () => {
    const http = await gw.call("xlm", `/${KEYS.all}`, { body: rpcBody("getLatestLedger", {}) });
    const served = (http.json as { result: { sequence: number } }).result.sequence;
    expect(served).toBe(HEAD + 1);
    const seen: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      const client = await Client.open(`ws://xlm.${DOMAIN}:${gw.port}/${KEYS.all}`);
      const answer = await client.call("getLatestLedger", {} as unknown as unknown[]);
      seen.push((answer.result as { sequence?: number } | undefined)?.sequence);
      client.close();
    }
    expect(seen).toEqual(Array(10).fill(HEAD + 1));
  });
});
