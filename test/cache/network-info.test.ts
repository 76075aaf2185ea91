import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// stellar-rpc's getNetwork (cmd/stellar-rpc/internal/methods/get_network.go) answers the core's current
// protocolVersion, its build and the Soroban network limits (coreClient.Info / SorobanInfo): all change at a
// protocol or network-settings upgrade. It was kept as an answer that never changes, so after an upgrade the
// gateway went on serving the old protocol version; it is kept only while the head stays.

const HEIGHT = 50_000;

describe("Stellar getNetwork after a protocol upgrade", () => {
  const endpoint = endpointsByLabel.get("xlm");
  if (endpoint === undefined) throw new Error("no xlm label");
  const state = nodeState(endpoint, HEIGHT);
  let protocolVersion = 22;
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(
      softwareNode(endpoint, () => state, [""], {
        answers: {
          getNetwork: {
            result: ({ chain }) => ({
              passphrase: chain,
              protocolVersion,
              build: `stellar-core 2${protocolVersion}.0.0`,
            }),
          },
        },
      }),
    );
    gw = await startGateway({
      upstreams: { xlm: [node.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE },
    });
    await everyNodeInRotation(gw, "xlm", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const getNetwork = async (id: number) => {
    const answer = await gw.call("xlm", `/${KEYS.all}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method: "getNetwork" }),
    });
    return {
      version: (answer.json as { result?: { protocolVersion?: number } }).result?.protocolVersion,
      cache: answer.headers["x-cache"],
    };
  };

  it("answers the node's protocol version once the network upgraded and ledgers closed after it", async () => {
    expect(await getNetwork(1)).toEqual({ version: 22, cache: "miss" });
    expect(await getNetwork(2)).toEqual({ version: 22, cache: "hit" });
    // the upgrade ledger closes, and more after it
    protocolVersion = 23;
    state.height += 10;
    const served = () => gw.gateway.upstreams.group("xlm", "/")?.served.height ?? 0;
    await eventually(() => served() === HEIGHT + 10, 3_000, "the served head moved on");
    const after = await getNetwork(3);
    expect(after).toEqual({ version: 23, cache: "miss" });
  });
});
