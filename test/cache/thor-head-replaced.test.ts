import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type Responder, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// Thor replaces its best block by another of the same number: of two blocks of equal total score, the one
// with the smaller id becomes the trunk's head (vechain/thor consensus IsTrunk: "smaller ID is preferred,
// since block with smaller ID usually has larger average score"), with the same parent. The number does
// not move, so only the best block's id says the head changed. The node answers as Thor's REST API does:
// GET /blocks/best and GET /blocks/<number> the block object (number, id, parentID, ...), as JSON with a
// newline (test/support/node-software.ts).

describe("Thor: the best block replaced by another of its number", () => {
  const vet = endpointsByLabel.get("vet") as Endpoint;
  const H = 20_000_000;
  const state = nodeState(vet, H);
  let replaced = false;
  const id = (number: number, tail: string) => `0x${number.toString(16).padStart(8, "0")}${tail.repeat(56)}`;
  const idAt = (number: number) => id(number, number === H && replaced ? "1" : "9");
  let node: LoopbackNode;
  let gw: RunningGateway;

  const block = (number: number) => ({
    number,
    id: idAt(number),
    size: 361,
    parentID: id(number - 1, "9"),
    timestamp: 1_735_689_600 + number * 10,
    gasLimit: 40_000_000,
    beneficiary: "0xb4094c25f86d628fdd571afc4077f0d0196afb48",
    gasUsed: 0,
    totalScore: number * 3,
    txsRoot: `0x${"45".repeat(32)}`,
    txsFeatures: 1,
    stateRoot: `0x${"67".repeat(32)}`,
    receiptsRoot: `0x${"89".repeat(32)}`,
    com: true,
    signer: "0x5b0e4d2c4f0ab4b9a2b84e7e0ce4c6e4e9d8b6a1",
    isTrunk: true,
    isFinalized: false,
    transactions: [],
  });
  const thor: Responder = (request) => {
    const named = /^\/blocks\/(best|\d+)$/.exec(request.url)?.[1];
    if (named === undefined || named === "0") return undefined;
    const number = named === "best" ? H : Number(named);
    return {
      headers: { "content-type": "application/json; charset=utf-8" },
      body: `${JSON.stringify(number > H ? null : block(number))}\n`,
    };
  };

  beforeAll(async () => {
    node = await startLoopbackNode(
      firstOf(
        thor,
        softwareNode(vet, () => state),
      ),
    );
    gw = await startGateway({
      upstreams: { vet: [node.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      // the operator's age: the head's answers live as long as the head does
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 60_000 },
    });
    await everyNodeInRotation(gw, "vet", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("ends the answers read at the head", async () => {
    const read = async () => {
      const answer = await gw.call("vet", `/${KEYS.all}/blocks/${H}`, { method: "GET" });
      return { id: (answer.json as { id: string }).id, cache: answer.headers["x-cache"] };
    };
    expect((await read()).id).toBe(id(H, "9"));
    expect(await read()).toEqual({ id: id(H, "9"), cache: "hit" });
    replaced = true;
    await eventually(async () => (await read()).id === id(H, "1"), 3_000, "the new best block");
  });
});
