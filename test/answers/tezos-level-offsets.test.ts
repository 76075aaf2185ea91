import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type Responder, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// Octez names a block by more than `head`, `head~N`, a level and a hash (tezos-mirror
// src/lib_shell_services/block_services.ml `parse_block`, whose RPC arg says so): `genesis+N` is level N,
// `L+N` and `L~N` (or `L-N`) the level N after or before level L, and a level is read by OCaml's
// Int32.of_string, which takes `0x…` too. A node that has not reached the level answers 404 with no body.
// Each of these names a block by its level, and must go only to a node that has reached it.

const xtz = endpointsByLabel.get("xtz") as Endpoint;
const H = 5_000_000;

/** The level an Octez block id names, as parse_block reads the level forms; undefined for any other. */
function octezLevel(id: string): number | undefined {
  const level = (text: string): number => {
    const n = /^0x[0-9a-f]+$/i.test(text)
      ? Number.parseInt(text.slice(2), 16)
      : /^\d+$/.test(text)
        ? Number(text)
        : Number.NaN;
    if (!Number.isSafeInteger(n)) throw new Error(`no level: ${text}`);
    return n;
  };
  try {
    const plus = /^(.+)\+(.+)$/.exec(id);
    if (plus)
      return plus[1] === "genesis"
        ? level(plus[2] as string)
        : level(plus[1] as string) + level(plus[2] as string);
    const back = /^(.+)[~-](.+)$/.exec(id);
    if (back) return level(back[1] as string) - level(back[2] as string);
    return level(id);
  } catch {
    return undefined;
  }
}

const NAMES = [`${H}+1`, `genesis+${H + 1}`, `${H + 2}~1`, `${H + 3}-2`, `0x${(H + 1).toString(16)}`];

describe("an Octez block id that names a level by offset, or in hex, reaches a node that has it", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;

  beforeAll(async () => {
    const byLevel =
      (height: number): Responder =>
      (request) => {
        const id = /^\/chains\/main\/blocks\/([^/]+)\/header$/.exec(request.url)?.[1];
        if (id === undefined || id === "head") return undefined;
        const level = octezLevel(id);
        if (level === undefined) return undefined;
        return level > height
          ? { status: 404, body: "" }
          : {
              headers: { "content-type": "application/json" },
              body: `{"protocol":"PtParisBxoLz5gzMmn3d9WBQNoPSZakgnkMC2VNuQ3KXfUtUQeZ","chain_id":"NetXdQprcVkpaWU","level":${level}}\n`,
            };
      };
    nodes = await Promise.all(
      [H + 1, H].map((height) =>
        startLoopbackNode(firstOf(byLevel(height), softwareNode(xtz, nodeState(xtz, height)))),
      ),
    );
    gw = await startGateway({
      upstreams: { xtz: nodes.map((node, i) => ({ url: node.url, name: i === 0 ? "ahead" : "behind" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  for (const name of NAMES)
    it(`10 reads of /chains/main/blocks/${name}/header (level ${H + 1}): never the 404 of the node behind`, async () => {
      for (let i = 0; i < 10; i++) {
        const r = await gw.call("xtz", `/${KEYS.all}/chains/main/blocks/${name}/header`, { method: "GET" });
        expect(r.status, `read ${i}: ${r.text}`).toBe(200);
        expect(r.json).toMatchObject({ level: H + 1 });
      }
      expect(nodes[1]?.requests.filter((r) => r.url.includes(`/blocks/${name}/`))).toEqual([]);
    });
});
