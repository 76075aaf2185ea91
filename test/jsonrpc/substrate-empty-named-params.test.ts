// jsonrpsee, the JSON-RPC server of Substrate nodes, reads a method's params only where the method takes
// some: a method without params (chain_getFinalizedHead, system_chain) ignores them, `"params": {}` too, and
// answers; one with params reads them in order (jsonrpsee types/src/params.rs ParamsSequence: an object is
// its "Invalid params", -32602 at HTTP 200). The gateway refused any object as params with its own
// INVALID_REQUEST at HTTP 400, so a generic client that sends `{}` for "no params" got an error where the
// node answers. Substrate's envelope now takes an object, and the node answers it as it would.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import type { LoopbackNode } from "../support/loopback-node.js";
import { startLoopbackNode } from "../support/loopback-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";

describe("Substrate: params as an object, as jsonrpsee takes them", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void = () => {};

  beforeAll(async () => {
    restore = resolveTestHosts();
    const dot = endpointsByLabel.get("dot") as Endpoint;
    node = await startLoopbackNode(softwareNode(dot, nodeState(dot, 1_000)));
    gw = await startGateway({ upstreams: { dot: [node.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore();
  });

  const call = (params: unknown) =>
    gw.call("dot", `/${KEYS.all}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "chain_getFinalizedHead", params }),
    });

  it("a method without params answers `params: {}` as it answers `[]`", async () => {
    const listed = await call([]);
    expect(listed.status).toBe(200);
    const named = await call({});
    expect([named.status, named.json]).toEqual([listed.status, listed.json]);
  });
});
