import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// bitcoind answers a call's own error with HTTP 500 and the JSON-RPC 1.0 error as the body (httprpc.cpp
// JSONErrorReply): a transaction it does not know is -5 at 500. That is the node's answer (registry
// `errorStatus`), relayed once and not held against the node: four such lookups took every node of the
// label out of rotation, and with them every caller's writes.

const btc = endpointsByLabel.get("btc") as Endpoint;
const UNKNOWN_TX = "ab".repeat(32);
const NO_SUCH_TX =
  '{"result":null,"error":{"code":-5,"message":"No such mempool or blockchain transaction. Use gettransaction for wallet transactions."},"id":1}\n';

describe("a bitcoind's own error at HTTP 500 is its answer (loopback Bitcoin Core)", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  const lookups = () =>
    nodes.flatMap((node) => node.requests.filter((r) => r.body.includes("getrawtransaction")));

  beforeAll(async () => {
    const unknownTx = (request: { body: string }) =>
      request.body.includes(UNKNOWN_TX) ? { status: 500, body: NO_SUCH_TX } : undefined;
    nodes = await Promise.all(
      [800_001, 800_000].map((height) =>
        startLoopbackNode(firstOf(unknownTx, softwareNode(btc, nodeState(btc, height)))),
      ),
    );
    gw = await startGateway({
      upstreams: { btc: nodes.map((node, i) => ({ url: node.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("is relayed as bitcoind sent it, asked of one node, and leaves every node in rotation", async () => {
    for (let i = 0; i < 6; i++) {
      const r = await gw.call("btc", `/${KEYS.all}/`, {
        body: `{"jsonrpc":"1.0","id":1,"method":"getrawtransaction","params":["${UNKNOWN_TX}"]}`,
      });
      expect(r.status).toBe(500);
      expect(r.json).toEqual(JSON.parse(NO_SUCH_TX));
    }
    expect(lookups()).toHaveLength(6);
    const states = gw.gateway.upstreams.group("btc", "/")?.members.map((m) => m.health.state);
    expect(states).toEqual(["healthy", "healthy"]);
  });
});
