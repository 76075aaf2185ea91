import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { LabelUpstreams } from "../../src/config/types.js";
import type { Mount } from "../../src/registry/types.js";
import type { UpstreamState } from "../../src/upstream/health.js";
import { CHAIN_ANSWERS, otherChain } from "../support/chain-answers.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { JSON_RPC_SOFTWARE, type NodeState, REST_SOFTWARE } from "../support/node-software.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import {
  answerKey,
  HEAD_ANSWERS,
  readHeight,
  typicalCalls,
  typicalRequest,
} from "../support/typical-calls.js";

// The prober over every interface in the registry, against loopback nodes that answer as each interface's
// node software does (support/node-software.ts: Bitcoin Core's "error": null, nearcore's error objects,
// toncenter's {ok, result}, Ogmios' 400s, Octez's error arrays, java-tron's HTTP 200 errors, …). Each label
// has its own node, whose state a test moves: serving, failing as its software fails, answering without
// a head, or on another chain. A label with several mounts gets an upstream list per mount, so each mount
// is probed with its own interface's calls.

const endpoints = [...endpointsByLabel.values()];
const heightOf = (index: number): number => 2_000_003 + index * 7_919;
const PROBE_MS = 100;

// A new interface needs test data in three files. These checks run before the prober's (whose loopback
// nodes cannot start without it), and name each missing piece with the file to edit and the labels it stops.
describe("the suite's test data covers every interface of the registry", () => {
  /** Each missing piece → the labels whose nodes lack it. */
  const gaps = (find: (mount: Mount) => string | undefined): Record<string, string> => {
    const labels = new Map<string, string[]>();
    for (const endpoint of endpoints)
      for (const mount of endpoint.mounts) {
        const gap = find(mount);
        if (gap !== undefined) labels.set(gap, [...(labels.get(gap) ?? []), endpoint.label]);
      }
    return Object.fromEntries([...labels].map(([gap, names]) => [gap, `labels ${names.join(", ")}`]));
  };

  it("its node software: how its node frames answers and errors", () => {
    const missing = gaps((mount) => {
      const [id] = mount.policy.id.split("+") as [string];
      if (JSON_RPC_SOFTWARE[id] !== undefined || REST_SOFTWARE[id] !== undefined) return undefined;
      return `interface ${id} has no node software: add it to JSON_RPC_SOFTWARE (a jsonrpc interface) or REST_SOFTWARE (a rest one) in test/support/node-software.ts`;
    });
    expect(missing).toEqual({});
  });

  it("how its node answers its head call", () => {
    const missing = gaps((mount) => {
      const key = answerKey(mount.head);
      if (HEAD_ANSWERS[key] !== undefined) return undefined;
      return `interface ${mount.policy.id}: its head call "${key}" has no answer: add how its node answers it to HEAD_ANSWERS in test/support/typical-calls.ts`;
    });
    expect(missing).toEqual({});
  });

  it("how its node answers its chain call", () => {
    const missing = gaps(({ chain, policy }) => {
      if (chain === undefined) return undefined;
      const key = chain.kind === "jsonrpc" ? chain.method : `${chain.method} ${chain.path}`;
      // a chain call that is also a head call (NEAR's status) is answered there
      if (CHAIN_ANSWERS[key] !== undefined || HEAD_ANSWERS[key] !== undefined) return undefined;
      return `interface ${policy.id}: its chain call "${key}" has no answer: add how its node answers it to CHAIN_ANSWERS in test/support/chain-answers.ts`;
    });
    expect(missing).toEqual({});
  });
});

describe("the prober reads every interface's nodes as their software answers", () => {
  const nodes = new Map<string, LoopbackNode>();
  const states = new Map<string, NodeState>();
  let gw: RunningGateway;

  beforeAll(async () => {
    const upstreams: Record<string, LabelUpstreams> = {};
    await Promise.all(
      endpoints.map(async (endpoint, index) => {
        const state = nodeState(endpoint, heightOf(index));
        states.set(endpoint.label, state);
        const node = await startLoopbackNode(softwareNode(endpoint, state));
        nodes.set(endpoint.label, node);
        upstreams[endpoint.label] =
          endpoint.mounts.length === 1
            ? [{ url: node.url, name: "node" }]
            : Object.fromEntries(endpoint.mounts.map((m) => [m.path, [{ url: node.url, name: "node" }]]));
      }),
    );
    gw = await startGateway({
      upstreams,
      health: {
        ...DEFAULT_HEALTH,
        probeIntervalMs: PROBE_MS,
        probeTimeoutMs: 2000,
        recoverAfter: 2,
        chainCheckIntervalMs: 3 * PROBE_MS,
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...nodes.values()].map((node) => node.close()));
  });

  for (const endpoint of endpoints) {
    const { label } = endpoint;
    const mounts = endpoint.mounts.map((m) => `${m.path} (${m.policy.id})`).join(", ");
    it.concurrent(`${label}: ${mounts}`, async () => {
      const state = states.get(label) as NodeState;
      const groups = gw.gateway.upstreams.groups().filter((g) => g.label === label);
      expect(groups).toHaveLength(endpoint.mounts.length);
      const members = () => groups.map((g) => g.members[0]?.health);
      const all = (wanted: UpstreamState) => members().every((h) => h?.state === wanted);
      const within = (what: string, condition: () => boolean) =>
        eventually(condition, 40 * PROBE_MS, `${label}: ${what}; states ${members().map((h) => h?.state)}`);

      // A node answering as its software does is in rotation with its head, and serves calls.
      await within(
        "in rotation at its height",
        () => all("healthy") && members().every((h) => h?.head === state.height),
      );
      const [call] = typicalCalls(endpoint);
      if (call === undefined) throw new Error(`no typical call for ${label}`);
      const request = typicalRequest(call, 7001);
      const served = await gw.call(label, `/${KEYS.all}${request.path}`, {
        method: request.method,
        ...(request.body === undefined ? {} : { body: request.body }),
      });
      expect(served.status, served.text).toBe(200);
      expect(readHeight(served.json, call.head)).toBe(state.height);

      // Failing the way its software fails (a 5xx, an error object, java-tron's HTTP 200 {"Error"}) is
      // evidence of failure.
      state.mode = "failing";
      await within("failing", () => all("failing"));

      // An answer without a head is no evidence: back in rotation, its head unknown.
      state.mode = "no-head";
      await within(
        "in rotation, head unknown",
        () => all("healthy") && members().every((h) => h?.head === undefined),
      );
      // the label has no head to hold its answers to: a warn line per node says so
      const headless = gw.logs.filter(
        (line) => line.includes("upstream head unknown") && line.includes(`"label":"${label}"`),
      );
      expect(headless.length, `${label}: ${headless.join("\n")}`).toBe(groups.length);

      // A node on another chain gets no call, whatever its head; it says what it answered.
      state.mode = "serving";
      const own = { chainId: state.chainId, chain: state.chain };
      const siblings = [...endpointsByLabel.values()]
        .filter((e) => e.code === endpoint.code)
        .map((e) => e.chain);
      const other = otherChain(own, endpoint.code, siblings);
      if (other.chain === undefined && other.chainId === undefined) return; // the registry names no chain (Atleta)
      Object.assign(state, other);
      await within("wrong-chain", () => all("wrong-chain"));
      const refused = await gw.call(label, `/${KEYS.all}${request.path}`, {
        method: request.method,
        ...(request.body === undefined ? {} : { body: request.body }),
      });
      expect(refused.status, refused.text).toBe(503);
      expect(refused.text).toContain("NO_UPSTREAM");
      const said = gw.logs.filter(
        (line) => line.includes(`"label":"${label}"`) && line.includes('"to":"wrong-chain"'),
      );
      expect(said.length, `${label}: a log line for the wrong chain`).toBeGreaterThan(0);
      // each mount's log line names what its chain call answered: a chain id, or a chain's name
      for (const named of [other.chain, other.chainId]) {
        if (named === undefined) continue;
        expect(
          said.some((line) => line.includes(`chain \\"${named}\\"`)),
          `${label}: ${said.join("\n")}`,
        ).toBe(true);
      }

      // Back on its own chain, back in rotation after good probes.
      Object.assign(state, own);
      await within(
        "back in rotation",
        () => all("healthy") && members().every((h) => h?.head === state.height),
      );
    });
  }
});
