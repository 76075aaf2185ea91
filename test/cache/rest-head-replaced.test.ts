import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type Responder, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A REST chain whose head block is replaced at the same height: what was read at the head must not outlive
// it. Octez's Tenderbake compares two blocks of one level by their round (fitness: level, locked round,
// predecessor's round, round; octez.tezos.com/docs/active/consensus.html, "Fitness"): a node whose head is
// the round-0 block of a level switches its head to the round-1 block of that level when it arrives, with
// the same predecessor. The level does not move, so only the head block's hash says the head changed. The
// node answers as Octez's resto does: GET /chains/main/blocks/head/header is the block header object
// (hash, level, predecessor, ...), GET /chains/main/blocks/<level>/hash the block's hash as a JSON string,
// each minified with a newline (test/support/node-software.ts).

const JSON_TYPE = { "content-type": "application/json" };

describe("Octez: the head block replaced by another of its level", () => {
  const xtz = endpointsByLabel.get("xtz") as Endpoint;
  const H = 4_000_000;
  const state = nodeState(xtz, H);
  let round = "a";
  const hash = (r: string, level: number) => `BL${r}${String(level).padStart(49 - r.length, "0")}`;
  let node: LoopbackNode;
  let gw: RunningGateway;

  const octez: Responder = (request) => {
    if (request.url === "/chains/main/blocks/head/header")
      return {
        headers: JSON_TYPE,
        body: `${JSON.stringify({
          protocol: "PsQuebecnLByd3JwTiGadoG4nGWi3HYiLXUjkibeFV8dCFeVMUg",
          chain_id: state.chain,
          hash: hash(round, H),
          level: H,
          proto: 21,
          predecessor: hash("a", H - 1),
          timestamp: "2025-01-01T00:00:00Z",
          validation_pass: 4,
          fitness: ["02", "003d0900", "", "ffffffff", round === "a" ? "00000000" : "00000001"],
        })}\n`,
      };
    const level = /^\/chains\/main\/blocks\/(\d+)\/hash$/.exec(request.url)?.[1];
    if (level === undefined) return undefined;
    const at = Number(level);
    return { headers: JSON_TYPE, body: `"${hash(at === H ? round : "a", at)}"\n` };
  };

  beforeAll(async () => {
    node = await startLoopbackNode(
      firstOf(
        octez,
        softwareNode(xtz, () => state),
      ),
    );
    gw = await startGateway({
      upstreams: { xtz: [node.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      // the operator's age: the head's answers live as long as the head does
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 60_000 },
    });
    await everyNodeInRotation(gw, "xtz", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("ends the answers read at the head", async () => {
    const read = async () => {
      const answer = await gw.call("xtz", `/${KEYS.all}/chains/main/blocks/${H}/hash`, { method: "GET" });
      return { json: answer.json, cache: answer.headers["x-cache"] };
    };
    expect((await read()).json).toBe(hash("a", H));
    expect(await read()).toEqual({ json: hash("a", H), cache: "hit" });
    round = "b";
    await eventually(async () => (await read()).json === hash("b", H), 3_000, "the new head block's hash");
    const header = await gw.call("xtz", `/${KEYS.all}/chains/main/blocks/head/header`, { method: "GET" });
    expect((header.json as { hash: string }).hash).toBe(hash("b", H));
  });
});
