import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// Octez's `GET /chains/{chain}/blocks?length=n` lists, for each head (the current one, or each `head=` the
// query names), that block and its n - 1 predecessors: chain_directory.ml `predecessors` reads the store's
// ancestors one by one, with no cap of its own (its "secure" ACL lists the route for public nodes), down to
// genesis or the node's caboose. `?length=100000000` on mainnet (level 9 million and more) walks the whole
// chain and answers some 500 MB of hashes: a block range as wide as a log query over the whole chain, which
// reached the node whole. The registry's `lists` now bounds it: wider than its refuseAbove, it is refused
// BLOCK_RANGE_TOO_LARGE, never sent (docs/upstreams.md, "Ranges that cannot swamp a node").

const H = 9_000_000;

/** Octez's answer: one list per head, of block hashes (tezosBlockHash-like ids, enough for the count). */
const ANSWERS: Record<string, TypicalAnswer> = {
  "GET /chains/main/blocks": { result: ({ height }) => [[`BLhead${height}`]] },
};

describe("Octez GET /chains/main/blocks?length= (a loopback Octez)", () => {
  const endpoint = endpointsByLabel.get("xtz") as Endpoint;
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(
      softwareNode(endpoint, nodeState(endpoint, H), [""], { answers: ANSWERS }),
    );
    gw = await startGateway({
      upstreams: { xtz: [{ url: node.url, name: "octez" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "xtz");
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const lists = () => node.requests.filter((r) => r.url.startsWith("/chains/main/blocks?")).length;
  const get = (query: string) =>
    gw.call("xtz", `/${KEYS.all}/chains/main/blocks?${query}`, { method: "GET" });

  for (const query of [
    "length=100000000",
    "length=10001",
    `length=5000&head=${"BLa".padEnd(51, "1")}&head=${"BLb".padEnd(51, "1")}&head=${"BLc".padEnd(51, "1")}`,
  ])
    it(`?${query.replace(/1{10,}/g, "…")} walks more blocks than a node is asked to: refused, never sent`, async () => {
      const before = lists();
      const answer = await get(query);
      expect(answer.text).toContain("BLOCK_RANGE_TOO_LARGE");
      expect(answer.status).toBe(413);
      expect(lists()).toBe(before);
      expect(answer.text).toContain('"refuseAbove":10000');
    });

  it("a list within the limit reaches the node as sent", async () => {
    const before = lists();
    const answer = await get("length=10");
    expect(answer.status).toBe(200);
    expect(lists()).toBe(before + 1);
  });
});
