// A notification (a JSON-RPC 2.0 call without an id) sent alone over HTTP that the gateway refused was
// answered with an error object at the refusal's status (403 for a method the network does not serve),
// where the node answers every notification, served or not, with nothing: go-ethereum's handler writes no
// answer (rpc/handler.go handleCallMsg), so Go's server sends an empty 200; Bitcoin Core 28 answers a 2.0
// notification, and a batch of notifications only, HTTP 204 with no body (src/httprpc.cpp HTTPReq_JSONRPC,
// doc/release-notes-27101.md), which the gateway answered an empty 200. JSON-RPC 2.0 §4.1: "The Server
// MUST NOT reply to a Notification". A refused notification is now answered as the node answers one it
// serves (registry envelope `notificationStatus`), and counted as refused, as in a batch.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";

const note = (method: string) => JSON.stringify({ jsonrpc: "2.0", method, params: [] });

describe("a refused notification sent alone over HTTP", () => {
  let geth: LoopbackNode;
  let bitcoind: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void = () => {};

  beforeAll(async () => {
    restore = resolveTestHosts();
    const btc = endpointsByLabel.get("btc") as Endpoint;
    [geth, bitcoind] = await Promise.all([
      startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1" })),
      startLoopbackNode(softwareNode(btc, nodeState(btc, 800_000))),
    ]);
    gw = await startGateway({ upstreams: { eth: [geth.url], btc: [bitcoind.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([geth?.close(), bitcoind?.close()]);
    restore();
  });

  const post = (label: string, body: string) => gw.call(label, `/${KEYS.all}`, { body });
  const lastLine = () => JSON.parse(gw.logs.filter((l) => l.includes('"status":')).at(-1) ?? "{}");
  const shape = (answer: { status: number; text: string; headers: Record<string, unknown> }) => ({
    status: answer.status,
    text: answer.text,
  });

  it("go-ethereum's dialect: an empty 200, as the node answers a notification it serves", async () => {
    const served = await post("eth", note("eth_blockNumber"));
    expect(shape(served)).toEqual({ status: 200, text: "" });
    const before = geth.requests.length;
    const refused = await post("eth", note("admin_peers"));
    expect(shape(refused)).toEqual(shape(served));
    expect(geth.requests.length).toBe(before);
    expect(lastLine()).toMatchObject({ error: "METHOD_NOT_FOUND" });
  });

  it("Bitcoin Core 28: 204 with no body, alone and as a batch of notifications only", async () => {
    const served = await post("btc", note("getblockcount"));
    expect(shape(served)).toEqual({ status: 204, text: "" });
    const before = bitcoind.requests.length;
    const refused = await post("btc", note("dumpprivkey"));
    expect(shape(refused)).toEqual(shape(served));
    expect(refused.headers["content-type"]).toBeUndefined();
    const servedBatch = await post("btc", `[${note("getblockcount")}]`);
    expect(shape(servedBatch)).toEqual({ status: 204, text: "" });
    const refusedBatch = await post("btc", `[${note("dumpprivkey")},${note("stop")}]`);
    expect(shape(refusedBatch)).toEqual(shape(servedBatch));
    expect(bitcoind.requests.length).toBe(before + 1);
  });

  it("a call with an id is still answered with its refusal", async () => {
    const answer = await post("eth", JSON.stringify({ jsonrpc: "2.0", id: 7, method: "admin_peers" }));
    expect(answer.status).toBe(403);
    expect(answer.json).toMatchObject({ id: 7, error: { code: -32601 } });
  });
});
