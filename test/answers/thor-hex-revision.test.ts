import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// Thor reads a revision's number as Go's strconv.ParseUint(revision, 0, 0) (vechain/thor api/utils
// revisions.go ParseRevision): `0x1312d01` is block 20000001, as `20000001` is, and the VeChain SDK's
// isBlockRevision takes any hex string. A node that has not reached that block answers 200 `null`
// (api/blocks: IsNotFound), so a caller who names the block the node ahead just made in hex must never be
// sent to the node behind.

const vet = endpointsByLabel.get("vet") as Endpoint;
const H = 20_000_000;
const HEX = `0x${(H + 1).toString(16)}`;

/** Thor's ParseRevision of a number: base 0 (0x, 0o, 0b prefixes), as Go reads it. */
function thorNumber(revision: string): number | undefined {
  const digits = revision.replaceAll("_", "");
  const n = /^0[xX][0-9a-fA-F]+$/.test(digits)
    ? Number.parseInt(digits.slice(2), 16)
    : /^\d+$/.test(digits)
      ? Number(digits)
      : Number.NaN;
  return Number.isSafeInteger(n) ? n : undefined;
}

describe("a VeChain block named by a hex number reaches a node that has it (loopback Thor)", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  const block = (number: number) => ({
    number,
    id: `0x${number.toString(16).padStart(8, "0")}${"cd".repeat(28)}`,
    parentID: `0x${(number - 1).toString(16).padStart(8, "0")}${"cd".repeat(28)}`,
    timestamp: 1_700_000_000 + number * 10,
  });

  beforeAll(async () => {
    nodes = await Promise.all(
      [H + 1, H].map((height) =>
        startLoopbackNode(
          softwareNode(vet, nodeState(vet, height), [""], {
            answers: {
              [`GET /blocks/${HEX}`]: {
                result: () => {
                  const n = thorNumber(HEX) as number;
                  return n <= height ? block(n) : null;
                },
              },
            },
          }),
        ),
      ),
    );
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

  it(`20 reads of /blocks/${HEX}, the block only the node ahead has: never null`, async () => {
    for (let i = 0; i < 20; i++) {
      const r = await gw.call("vet", `/${KEYS.all}/blocks/${HEX}`);
      expect(r.status).toBe(200);
      expect(r.json, `read ${i}`).toMatchObject({ number: H + 1 });
    }
    expect(nodes[1]?.requests.filter((r) => r.url.includes(HEX))).toEqual([]);
  });
});
