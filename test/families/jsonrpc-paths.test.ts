import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import type { LoopbackNode } from "../support/loopback-node.js";
import { HEIGHT, startNodeFor } from "../support/sdk-nodes.js";

// toncenter's SDKs are set up with the server's own JSON-RPC path (tonweb's and @ton/ton's endpoint is
// https://toncenter.com/api/v2/jsonRPC; the Python server's is /jsonRPC): below the key, those paths take
// the same calls as the key's URL itself (registry `jsonRpcPaths`), and the node gets each at its own URL.
describe("a JSON-RPC interface's own paths (toncenter's /api/v2/jsonRPC)", () => {
  const endpoint = endpointsByLabel.get("ton") as Endpoint;
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    const started = await startNodeFor(endpoint, endpoint.mounts[0] as Endpoint["mounts"][number]);
    node = started.node;
    gw = await startGateway({ upstreams: { ton: [started.upstream] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const masterchainInfo = (path: string) =>
    gw.call("ton", `/${KEYS.all}${path}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getMasterchainInfo", params: {} }),
    });

  it("answers at the key's URL and at the server's own paths alike, from the node's one URL", async () => {
    for (const path of ["/", "/jsonRPC", "/api/v2/jsonRPC"]) {
      node.requests.length = 0;
      const answer = await masterchainInfo(path);
      expect(answer.status, path).toBe(200);
      expect((answer.json as { result: { last: { seqno: number } } }).result.last.seqno).toBe(HEIGHT);
      // the node's own path (ton-http-api's /jsonRPC, as its upstream URL says), never the caller's again
      expect(node.requests.map((request) => request.url)).toEqual(["/jsonRPC"]);
    }
  });

  it("refuses any other path below the key", async () => {
    for (const path of ["/api/v3/jsonRPC", "/jsonRPC/x", "/api"]) {
      const answer = await masterchainInfo(path);
      expect(answer.status, path).toBe(404);
    }
  });
});
