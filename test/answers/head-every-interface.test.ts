import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { LabelUpstreams } from "../../src/config/types.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import {
  answerKey,
  readHeight,
  type TypicalCall,
  typicalCalls,
  typicalRequest,
} from "../support/typical-calls.js";

// The head never goes backwards on any interface (docs/upstreams.md, "Answers across nodes"): every label of
// the registry whose head call a caller may send, behind two loopback nodes that answer as its node
// software does (support/node-software.ts), one block apart and both in rotation. The head call, sent by a
// caller 30 times while the nodes move on, never answers lower than it did before: JSON-RPC (nearcore's
// status, Substrate's chain_getHeader, Bitcoin Core's getblockcount, …) and REST (algod's GET /v2/status,
// Octez's head header, …) alike. Without the rule, round robin alternates the two nodes' heads.

const PROBE_MS = 100;
const CALLS = 30;

interface Case {
  readonly endpoint: Endpoint;
  readonly call: TypicalCall;
  readonly ahead: NodeState;
  readonly behind: NodeState;
}

/** The endpoint's own head call, when it is the head call of the mount that serves it (what the gateway learns from). */
function headCase(endpoint: Endpoint, height: number): Case | undefined {
  const call = typicalCalls(endpoint)[0];
  const mount = endpoint.mounts.find((m) => m.path === call?.mountPath);
  if (call === undefined || mount === undefined || answerKey(mount.head) !== answerKey(call.head))
    return undefined;
  // every mount of a multi-mount label gets the same two nodes, so each mount's prober sees them in rotation
  return { endpoint, call, ahead: nodeState(endpoint, height + 1), behind: nodeState(endpoint, height) };
}

const cases = [...endpointsByLabel.values()]
  .map((endpoint, index) => headCase(endpoint, 1_000_000 + index * 1_000))
  .filter((c): c is Case => c !== undefined);

describe("the head never goes backwards, on every interface's head call (loopback nodes of each software)", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;

  beforeAll(async () => {
    const upstreams: Record<string, LabelUpstreams> = {};
    await Promise.all(
      cases.map(async ({ endpoint, ahead, behind }) => {
        const [a, b] = await Promise.all([
          startLoopbackNode(softwareNode(endpoint, () => ahead)),
          startLoopbackNode(softwareNode(endpoint, () => behind)),
        ]);
        nodes.push(a, b);
        const list = [
          { url: a.url, name: "ahead" },
          { url: b.url, name: "behind" },
        ];
        upstreams[endpoint.label] =
          endpoint.mounts.length === 1
            ? list
            : Object.fromEntries(endpoint.mounts.map((m) => [m.path, list]));
      }),
    );
    gw = await startGateway({ upstreams, health: { ...DEFAULT_HEALTH, probeIntervalMs: PROBE_MS } });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((node) => node.close()));
  });

  it("covers a non-EVM JSON-RPC family and a REST family", () => {
    const families = new Set(cases.map((c) => `${c.call.head.kind} ${c.call.interfaces}`));
    for (const wanted of [
      "jsonrpc near",
      "jsonrpc substrate",
      "jsonrpc bitcoin-core",
      "rest algod",
      "rest tezos",
    ])
      expect(
        [...families].some((f) => f.startsWith(wanted)),
        wanted,
      ).toBe(true);
  });

  for (const { endpoint, call, ahead, behind } of cases) {
    it.concurrent(`${endpoint.label}: ${call.name}`, async () => {
      await everyNodeInRotation(gw, endpoint.label, 40 * PROBE_MS);
      const seen: number[] = [];
      for (let i = 0; i < CALLS; i++) {
        if (i === CALLS / 2) {
          // both move on: the one behind reaches the old head, the one ahead goes one further
          behind.height = ahead.height;
          ahead.height += 1;
        }
        const request = typicalRequest(call, i + 1);
        const answer = await gw.call(endpoint.label, `/${KEYS.all}${call.path}`, {
          method: request.method,
          ...(request.body === undefined ? {} : { body: request.body }),
          headers: { "content-type": "application/json" },
        });
        expect(answer.status, answer.text).toBe(200);
        seen.push(readHeight(answer.json, call.head));
      }
      const backwards = seen.filter((height, i) => i > 0 && height < (seen[i - 1] as number));
      expect(backwards, `${endpoint.label} saw ${seen.join(" ")}`).toEqual([]);
    });
  }
});
