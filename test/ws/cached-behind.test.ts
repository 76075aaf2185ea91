import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A WebSocket connection keeps its node (docs/upstreams.md, "WebSocket"); the cache is the label's
// (docs/cache.md, "WebSockets"). When the connection's node falls a ledger behind the head the label
// served, its own node's answer would show a caller reading over HTTP too the head going back, and an
// answer kept from a node at that head, then its own node's, the socket's caller alone: its reads at the
// head go to a node at the served head (ws/head-reads.ts). Stellar RPC, bridged over HTTP to one node.
const HEAD = 5_000_000;

describe("a WebSocket connection whose node falls behind the served head reads the served head", () => {
  const xlm = endpointsByLabel.get("xlm");
  if (xlm === undefined) throw new Error("no xlm in the registry");
  let states: NodeState[];
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    states = [nodeState(xlm, HEAD), nodeState(xlm, HEAD)];
    nodes = await Promise.all(states.map((state) => startLoopbackNode(softwareNode(xlm, state))));
    gw = await startGateway({
      upstreams: { xlm: nodes.map((node, i) => ({ url: node.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 10_000 },
    });
    await everyNodeInRotation(gw, "xlm");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes?.map((node) => node.close()) ?? []);
    restore?.();
  });

  it("never reads a head below the one an HTTP caller was served, nor goes back to its own node's lower one", async () => {
    const client = await Client.open(`ws://xlm.${DOMAIN}:${gw.port}/${KEYS.all}`);
    // the node the connection is on: the one its call reached, by an id no probe has
    client.send(rpcBody("getLatestLedger", {}, "find-the-node"));
    await client.answerTo('"find-the-node"');
    const own = nodes.findIndex((node) => node.requests.some((r) => r.body.includes('"find-the-node"')));
    expect(own).toBeGreaterThanOrEqual(0);
    // the other node moves a ledger on, and an HTTP caller reads it: the label's cache keeps it
    (states[1 - own] as NodeState).height = HEAD + 1;
    await eventually(
      () => gw.gateway.upstreams.group("xlm", "/")?.served.height === HEAD + 1,
      5_000,
      "served",
    );
    for (let i = 0; i < 2; i++) {
      const http = await gw.call("xlm", `/${KEYS.all}`, { body: rpcBody("getLatestLedger", {}) });
      expect((http.json as { result: { sequence: number } }).result.sequence).toBe(HEAD + 1);
    }
    // the connection stays on its node in rotation, and its reads at the head go to the node at it
    const seen: number[] = [];
    for (let i = 0; i < 3; i++) {
      client.send(rpcBody("getLatestLedger", {}, `at-head-${i}`));
      seen.push(((await client.answerTo(`"at-head-${i}"`)).result as { sequence: number }).sequence);
    }
    expect(seen).toEqual([HEAD + 1, HEAD + 1, HEAD + 1]);
    expect((nodes[own] as LoopbackNode).requests.filter((r) => r.body.includes('"at-head-'))).toEqual([]);
    expect(
      (nodes[1 - own] as LoopbackNode).requests.filter((r) => r.body.includes('"at-head-')),
    ).toHaveLength(3);
    client.close();
  });
});
