import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, type Responder, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A head-relative read goes only to the nodes that reached the head the label served. When the one that
// had dies under the read, the others are still there: the read waits for one of them to reach that head,
// about a block, and else answers from the highest, as a read that found no node at the head does. It
// answered NO_UPSTREAM (the SIGKILL case of test/upstream/anvil.test.ts met it when the dead node was the
// only one ahead).

const vet = endpointsByLabel.get("vet") as Endpoint;
const H = 20_000_000;

describe("a head-relative read whose only node at the served head dies (loopback VeChain Thor)", () => {
  let nodes: LoopbackNode[];
  let behind: NodeState;
  let gw: RunningGateway;

  beforeAll(async () => {
    behind = nodeState(vet, H);
    nodes = await Promise.all([
      startLoopbackNode(softwareNode(vet, nodeState(vet, H + 1))),
      startLoopbackNode(softwareNode(vet, () => behind)),
    ]);
    gw = await startGateway({
      upstreams: { vet: nodes.map((node, i) => ({ url: node.url, name: i === 0 ? "ahead" : "behind" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("is answered by the node behind, once it reaches that head, not refused", async () => {
    const first = await gw.call("vet", `/${KEYS.all}/blocks/best`);
    expect(first.json).toMatchObject({ number: H + 1 });
    await nodes[0]?.close();
    // the node behind reaches the served head a moment after the read arrives
    setTimeout(() => {
      behind = nodeState(vet, H + 1);
    }, 200).unref();
    const after = await gw.call("vet", `/${KEYS.all}/blocks/best`);
    expect(after.status, JSON.stringify(after.json)).toBe(200);
    expect(after.json).toMatchObject({ number: H + 1 });
  });
});

describe("a head-relative read whose only node at the served head hangs (loopback VeChain Thor)", () => {
  let nodes: LoopbackNode[];
  let behind: NodeState;
  let hung = false;
  let gw: RunningGateway;

  beforeAll(async () => {
    behind = nodeState(vet, H);
    const ahead = softwareNode(vet, nodeState(vet, H + 1));
    // a node that stops answering, its connections open: a hung process, or a host gone quiet
    const hanging: Responder = (request) => (hung ? new Promise(() => {}) : ahead(request));
    nodes = await Promise.all([
      startLoopbackNode(hanging),
      startLoopbackNode(softwareNode(vet, () => behind)),
    ]);
    gw = await startGateway({
      upstreams: { vet: nodes.map((node, i) => ({ url: node.url, name: i === 0 ? "ahead" : "behind" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      limits: { upstream: { ...DEFAULT_LIMITS.upstream, hedgeMinMs: 50, hedgeMaxMs: 100 } },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("is hedged on the node behind once it reaches that head, well within the call's deadline", async () => {
    const first = await gw.call("vet", `/${KEYS.all}/blocks/best`);
    expect(first.json).toMatchObject({ number: H + 1 });
    hung = true;
    setTimeout(() => {
      behind = nodeState(vet, H + 1);
    }, 200).unref();
    const started = performance.now();
    const after = await gw.call("vet", `/${KEYS.all}/blocks/best`);
    expect(after.status, JSON.stringify(after.json)).toBe(200);
    expect(after.json).toMatchObject({ number: H + 1 });
    // the deadline is 10 s: the answer came from the hedge, not from the slow node's giving up
    expect(performance.now() - started).toBeLessThan(DEFAULT_LIMITS.upstream.deadlineMs / 2);
  });
});

describe("a head-relative read whose only node at the served head is slow, then fails (loopback VeChain Thor)", () => {
  let nodes: LoopbackNode[];
  let behind: NodeState;
  let sick = false;
  let gw: RunningGateway;

  beforeAll(async () => {
    behind = nodeState(vet, H);
    const ahead = softwareNode(vet, nodeState(vet, H + 1));
    // past the hedge delay, then a 503: the read is already waiting for another node to reach the head
    const slowThenFailing: Responder = (request) =>
      sick
        ? new Promise((resolve) => setTimeout(() => resolve({ status: 503, body: "overloaded" }), 300))
        : ahead(request);
    nodes = await Promise.all([
      startLoopbackNode(slowThenFailing),
      startLoopbackNode(softwareNode(vet, () => behind)),
    ]);
    gw = await startGateway({
      upstreams: { vet: nodes.map((node, i) => ({ url: node.url, name: i === 0 ? "ahead" : "behind" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      limits: { upstream: { ...DEFAULT_LIMITS.upstream, hedgeMinMs: 50, hedgeMaxMs: 100 } },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("goes on waiting for the node behind, and is answered by it, not with the slow node's failure", async () => {
    const first = await gw.call("vet", `/${KEYS.all}/blocks/best`);
    expect(first.json).toMatchObject({ number: H + 1 });
    sick = true;
    setTimeout(() => {
      behind = nodeState(vet, H + 1);
    }, 600).unref();
    const after = await gw.call("vet", `/${KEYS.all}/blocks/best`);
    expect(after.status, after.text).toBe(200);
    expect(after.json).toMatchObject({ number: H + 1 });
  });
});
