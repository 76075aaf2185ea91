import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import { type OgmiosNode, startOgmiosNode } from "../support/ogmios-ws-node.js";
import { nodeState } from "../support/software-node.js";

// Cardano's head call (Ogmios' queryNetwork/blockHeight) counts blocks, which come about every 20 s; the
// registry gave `ada` a block time of one second (a slot's), from when the head call read the tip's slot.
// The lag threshold is `maxLagSeconds` of the network's blocks: 30 blocks, some ten minutes, so a node ten
// blocks (three minutes) behind its peer stayed in rotation, and a read at a block it lacked waited on it.

const HEIGHT = 11_000_000;

describe("an Ogmios node ten blocks behind its label's other node", () => {
  const ada = endpointsByLabel.get("ada") as Endpoint;
  let ahead: OgmiosNode;
  let behind: OgmiosNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    ahead = await startOgmiosNode(ada, nodeState(ada, HEIGHT));
    behind = await startOgmiosNode(ada, nodeState(ada, HEIGHT - 10));
    gw = await startGateway({
      upstreams: {
        ada: [
          { url: ahead.url, name: "ahead" },
          { url: behind.url, name: "behind" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([ahead?.close(), behind?.close()]);
  });

  it("is lagging: the threshold is in Cardano's blocks of some 20 s, not in one-second slots", async () => {
    const state = (name: string) =>
      gw.gateway.upstreams.group("ada", "/")?.members.find((m) => m.name === name)?.health.state;
    await eventually(() => state("ahead") === "healthy", 5_000, "the node at the head probed");
    await eventually(() => state("behind") === "lagging", 5_000, "the node ten blocks behind judged");
    expect(state("behind")).toBe("lagging");
  });
});
