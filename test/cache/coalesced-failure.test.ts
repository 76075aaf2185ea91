import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { callsWaiting } from "../../src/cache/relay-cached.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { substrateHash } from "../support/chain-answers.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// Identical reads in flight share one node call, but only its success: the reference's rules for
// coalescing (cache-and-coalescing.md, "Rules that work", 8: "share successes only"). A Substrate node
// answers a call its backend could not serve at that moment with HTTP 200 and a JSON-RPC error, code 4003,
// "Client error: Backend error: …" (sc-rpc-api's client errors, as the loopback's Substrate software
// answers its failure: support/node-software.ts), which the gateway relays as the node's answer to the
// call. A caller whose identical call waited on that one was given the same error, where its own call a
// moment later succeeds. Now the caller whose call it was gets the error; the callers that waited ask
// again, together, on one call.

const H = 500;

describe("a coalesced call whose node answered with a passing error", () => {
  const dot = endpointsByLabel.get("dot") as Endpoint;
  const serve = softwareNode(dot, nodeState(dot, H));
  let node: LoopbackNode;
  let gw: RunningGateway;
  let hold: Promise<void> | undefined;
  /** The block the test asks the hash of. */
  let at = 40;
  /** The calls for block `at` the node has had: the first of each test's is answered "busy". */
  let asked = 0;
  let busyAt = 1;
  /** Every call for block `at` answered "busy", not only the first. */
  let always = false;

  beforeAll(async () => {
    node = await startLoopbackNode(async (request) => {
      // each test asks its own block: a final block's hash, once had, is answered from the cache
      if (!request.body.includes(`"chain_getBlockHash","params":[${at}]`)) return serve(request);
      asked += 1;
      const first = asked === busyAt;
      if (!first && !always) return serve(request);
      if (first && hold !== undefined) await hold;
      const { id } = JSON.parse(request.body) as { id: unknown };
      return {
        body: {
          jsonrpc: "2.0",
          id,
          error: { code: 4003, message: "Client error: Backend error: database is busy" },
        },
      };
    });
    gw = await startGateway({
      upstreams: { dot: [node.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 10_000 },
    });
    await everyNodeInRotation(gw, "dot", 4_000);
    // the prober's first reading of the head block (chain_getBlockHash(), then its header) moves the head's
    // epoch once, and a call asked before it is not one the calls asked after it wait on: once the second
    // round asks it, the first round's reading is in
    const headBlockAsked = () =>
      node.requests.filter((r) => r.body.includes('"method":"chain_getBlockHash","params":[]')).length;
    await eventually(() => headBlockAsked() >= 2, 4_000, "the prober's head block read twice");
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const cache = () => gw.gateway.upstreams.group("dot", "/")?.cache as NonNullable<unknown>;
  const call = (id: number) =>
    JSON.stringify({ jsonrpc: "2.0", id, method: "chain_getBlockHash", params: [at] });
  const post = (body: string) => gw.call("dot", `/${KEYS.all}`, { body });

  /** The first call at the node, held; `follow` sent once it is there; then the node answers "busy". */
  async function whileHeld<T>(first: () => Promise<T>, follow: () => Promise<T>, waiting: number) {
    let release = () => {};
    hold = new Promise((resolve) => {
      release = resolve;
    });
    at += 1;
    busyAt = asked + 1;
    const lead = first();
    await eventually(() => asked === busyAt, 4_000, "the first call at the node");
    const followers = [follow(), ...(waiting > 1 ? [follow()] : [])];
    await eventually(
      () => callsWaiting(cache() as Parameters<typeof callsWaiting>[0]) === waiting,
      4_000,
      "the other calls waiting on it",
    );
    release();
    hold = undefined;
    return Promise.all([lead, ...followers]);
  }

  it("the callers that waited on it ask again, on one call, and get the block's hash", async () => {
    const before = asked;
    const [lead, ...others] = await whileHeld(
      () => post(call(1)),
      () => post(call(2)),
      2,
    );
    expect((lead as { json: { error: { code: number } } }).json.error.code).toBe(4003);
    for (const other of others)
      expect(other.json, JSON.stringify(other.json)).toMatchObject({
        id: 2,
        result: substrateHash(dot.chain as string, at),
      });
    // the node once for the first call, once more for the two that waited
    expect(asked - before).toBe(2);
  });

  it("a batch's identical call that waited on it asks again too", async () => {
    const [lead, batch] = await whileHeld(
      () => post(call(3)),
      () => post(`[${call(4)}]`),
      1,
    );
    expect((lead as { json: { error: { code: number } } }).json.error.code).toBe(4003);
    expect(batch?.json, JSON.stringify(batch?.json)).toMatchObject([
      { id: 4, result: substrateHash(dot.chain as string, at) },
    ]);
  });

  it("an error the node gives every time is each waiting caller's answer, the node asked twice in all", async () => {
    always = true;
    const before = asked;
    const answers = await whileHeld(
      () => post(call(5)),
      () => post(call(6)),
      2,
    );
    always = false;
    for (const answer of answers) expect((answer.json as { error: { code: number } }).error.code).toBe(4003);
    expect(answers.map((a) => (a.json as { id: number }).id)).toEqual([5, 6, 6]);
    expect(asked - before).toBe(2);
  });
});
