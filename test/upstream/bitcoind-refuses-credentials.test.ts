import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { RPC_PASSWORD } from "../support/node-guards.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// bitcoind answers a request whose credentials it does not take with HTTP 401, an empty body and
// `WWW-Authenticate: Basic realm="jsonrpc"` (src/httprpc.cpp HTTPReq_JSONRPC). A node restarted with
// another rpcauth, between two probes, so refuses the gateway's own credentials: that is the node out of
// service, not the caller's key refused. bitcoin-cli reads a 401 as "Authorization failed: Incorrect
// rpcuser or rpcpassword", about the caller's credentials: the call must go to the other node.

const btc = endpointsByLabel.get("btc") as Endpoint;
const H = 870_000;

describe("btc: a node that stopped taking the gateway's rpcpassword between two probes", () => {
  const nodes: LoopbackNode[] = [];
  let refusing = false;
  let gw: RunningGateway;
  beforeAll(async () => {
    for (const i of [0, 1]) {
      const serve = softwareNode(btc, nodeState(btc, H), [""], { guarded: true });
      nodes.push(
        await startLoopbackNode((request) => (i === 1 && refusing ? RPC_PASSWORD.refusal : serve(request))),
      );
    }
    gw = await startGateway({
      upstreams: {
        btc: nodes.map((n, i) => ({
          url: n.url.replace("http://", "http://rpcuser:rpcpassword@"),
          name: `n${i}`,
        })),
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
  });

  it("a caller's getblockcount is answered by the other node, never a 401", async () => {
    refusing = true;
    const seen: string[] = [];
    for (let id = 1; id <= 8; id++) {
      const r = await gw.call("btc", `/${KEYS.all}/`, {
        body: JSON.stringify({ jsonrpc: "1.0", id, method: "getblockcount", params: [] }),
      });
      seen.push(`${r.status} ${r.text.trim()}`);
    }
    expect(seen).toEqual(seen.map((_, i) => `200 {"result":${H},"error":null,"id":${i + 1}}`));
  });
});
