import { describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";

// Where a dialect takes params by name (registry `envelopes`), a call that sends them so has its block
// param and its range found by the names the registry gives their places (`reads.paramNames`): without a
// name, a by-name call's block read as none and its range went unguarded (starknet.js's getEvents
// reached the node from block 0 to the head).

describe("reads by name", () => {
  const policies = new Map(
    [...endpointsByLabel.values()].flatMap((e) => e.mounts.map((m) => [m.policy.id, m.policy] as const)),
  );
  for (const [id, policy] of policies) {
    const rpc = policy.jsonrpc;
    const reads = rpc?.reads;
    if (rpc === undefined || reads === undefined) continue;
    const byName = rpc.validate({ jsonrpc: "2.0", id: 1, method: "x", params: {} });
    const byPosition = rpc.validate({ jsonrpc: "2.0", id: 1, method: "x", params: [] });
    // a dialect of names only (`params` itself names the block) or of positions only needs none; nor does
    // one that takes an object and reads no name in it (jsonrpsee's ParamsSequence: a method without params
    // answers `{}`, one with params refuses an object itself, -32602), whose calls name no block by name
    if (!byName || !byPosition || rpc.envelope === "jsonrpsee") continue;
    it(`${id}: every numbered block param and range param has its name`, () => {
      const places = [
        ...Object.entries(reads.at ?? {}),
        ...Object.entries(reads.ranges ?? {}).map(([method, rule]) => [method, rule.param] as const),
      ].filter((entry): entry is [string, number] => typeof entry[1] === "number");
      const unnamed = places.filter(([method, at]) => reads.paramNames?.[method]?.[at] === undefined);
      expect(unnamed).toEqual([]);
    });
  }
});
