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
// had dies, hangs or fails under the read, the others are still there: the read waits for one of them to
// reach that head, about a block, and else answers from the highest, as a read that found no node at the
// head does. It answered NO_UPSTREAM when that node died (the SIGKILL case of test/upstream/anvil.test.ts),
// UPSTREAM_TIMEOUT after the whole deadline when it hung, and the node's 503 when it was slow, then failed.

const vet = endpointsByLabel.get("vet") as Endpoint;
const H = 20_000_000;

/** How the node at the served head goes wrong, once the test says so. */
interface Case {
  readonly what: string;
  /** Its answer from then on: undefined when the node is closed instead (it refuses connections). */
  readonly fault: Responder | undefined;
  /** When the node behind reaches the served head, after the read arrives. */
  readonly catchUpMs: number;
}

const CASES: readonly Case[] = [
  { what: "dies", fault: undefined, catchUpMs: 200 },
  // its connections open, no answer: a hung process, or a host gone quiet
  { what: "hangs", fault: () => new Promise(() => {}), catchUpMs: 200 },
  // past the hedge delay, then a 503: the read is already waiting for another node to reach the head
  {
    what: "is slow, then fails",
    fault: () =>
      new Promise((resolve) => setTimeout(() => resolve({ status: 503, body: "overloaded" }), 300)),
    catchUpMs: 600,
  },
];

describe.each(CASES)(
  "a head-relative read whose only node at the served head $what (loopback VeChain Thor)",
  ({ fault, catchUpMs }) => {
    let nodes: LoopbackNode[];
    let behind: NodeState;
    let faulty = false;
    let gw: RunningGateway;

    beforeAll(async () => {
      behind = nodeState(vet, H);
      const ahead = softwareNode(vet, nodeState(vet, H + 1));
      nodes = await Promise.all([
        startLoopbackNode((request) => (faulty && fault !== undefined ? fault(request) : ahead(request))),
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

    it("is answered by the node behind once it reaches that head, well within the call's deadline", async () => {
      const first = await gw.call("vet", `/${KEYS.all}/blocks/best`);
      expect(first.json).toMatchObject({ number: H + 1 });
      faulty = true;
      if (fault === undefined) await nodes[0]?.close();
      setTimeout(() => {
        behind = nodeState(vet, H + 1);
      }, catchUpMs).unref();
      const started = performance.now();
      const after = await gw.call("vet", `/${KEYS.all}/blocks/best`);
      expect(after.status, after.text).toBe(200);
      expect(after.json).toMatchObject({ number: H + 1 });
      // the deadline is 10 s: the answer is the other node's, not the faulty node's giving up
      expect(performance.now() - started).toBeLessThan(DEFAULT_LIMITS.upstream.deadlineMs / 2);
    });
  },
);
