import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { LabelUpstreams } from "../../src/config/types.js";
import { eventually } from "../support/eventually.js";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { typicalCalls, typicalNode } from "../support/typical-calls.js";

// The prober reads a head from every interface in the registry: every label gets a loopback node at a
// height of its own, answering as its interfaces' nodes do, and every mount of a label with several gets
// its own upstream list, so each mount is probed with its own interface's head call.

const endpoints = [...endpointsByLabel.values()];
const heightOf = (index: number): number => 2_000_003 + index * 7_919;

describe("the prober reads the head of every interface in the registry", () => {
  const nodes = new Map<string, LoopbackNode>();
  let gw: RunningGateway;

  beforeAll(async () => {
    const upstreams: Record<string, LabelUpstreams> = {};
    await Promise.all(
      endpoints.map(async (endpoint, index) => {
        const node = await startLoopbackNode(
          typicalNode(endpoint.label, typicalCalls(endpoint), heightOf(index), [""]),
        );
        nodes.set(endpoint.label, node);
        upstreams[endpoint.label] =
          endpoint.mounts.length === 1
            ? [node.url]
            : Object.fromEntries(endpoint.mounts.map((m) => [m.path, [node.url]]));
      }),
    );
    gw = await startGateway({
      upstreams,
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 300, probeTimeoutMs: 2000 },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...nodes.values()].map((node) => node.close()));
  });

  for (const [index, endpoint] of endpoints.entries()) {
    it(`${endpoint.label}: ${endpoint.mounts.map((m) => `${m.path} (${m.policy.id})`).join(", ")}`, async () => {
      const groups = gw.gateway.upstreams.groups().filter((g) => g.label === endpoint.label);
      expect(groups).toHaveLength(endpoint.mounts.length === 1 ? 1 : endpoint.mounts.length);
      await eventually(
        () => groups.every((g) => g.members.every((m) => m.health.head !== undefined)),
        10_000,
        `a head from every mount of ${endpoint.label}`,
      );
      for (const group of groups) {
        const [member] = group.members;
        expect(member?.health.head, `${endpoint.label} at ${group.mount}`).toBe(heightOf(index));
        expect(member?.health.state).toBe("healthy");
      }
      // the probes went to the mounts' own paths with each interface's head call
      const seen = nodes.get(endpoint.label)?.requests ?? [];
      for (const mount of endpoint.mounts) {
        const head = mount.head;
        const path =
          head.kind === "jsonrpc" ? mount.path : `${mount.path === "/" ? "" : mount.path}${head.path}`;
        expect(
          seen.some(
            (r) => r.url === path && (head.kind === "rest" || r.body.includes(`"method":"${head.method}"`)),
          ),
        ).toBe(true);
      }
    });
  }
});
