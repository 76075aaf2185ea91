import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// A key never reaches an upstream, a log line or an error body.
describe("the API key stays secret", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  const unknown = "FNnotAKeyOfAnyAccount000000000";

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    gw = await startGateway({ upstreams: { eth: [node.url], "eth-archive": ["http://127.0.0.1:1"] } });
    // successes, refusals, an unknown key, an upstream failure, a bad path that still carries a key
    await gw.call("eth", `/${KEYS.all}/`, { body: rpcBody("eth_blockNumber") });
    await gw.call("eth", `/${KEYS.all}/`, { body: rpcBody("admin_peers") });
    await gw.call("eth", `/${KEYS.ethOnly}/`, { body: rpcBody("debug_traceTransaction", ["0x1"]) });
    await gw.call("eth", `/${unknown}/`, { body: rpcBody("eth_blockNumber") });
    await gw.call("bsc", `/${KEYS.ethOnly}/`, { body: rpcBody("eth_blockNumber") });
    await gw.call("eth-archive", `/${KEYS.all}/`, { body: rpcBody("eth_blockNumber") });
    await gw.call("eth", `/${KEYS.all}/x/../y`, { body: rpcBody("eth_blockNumber") });
    // tools that also append the key as a query parameter
    await gw.call("eth", `/${KEYS.all}/?apikey=${KEYS.all}&trace=on&token=x${KEYS.all}y`, {
      body: rpcBody("eth_blockNumber"),
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("is in no log line, only its short id is", () => {
    const log = gw.logs.join("");
    expect(gw.logs.length).toBeGreaterThanOrEqual(7);
    for (const key of [KEYS.all, KEYS.ethOnly, unknown]) expect(log).not.toContain(key);
    expect(log).toContain(`"key":"${KEYS.all.slice(0, 8)}"`);
  });

  it("is in no upstream request", () => {
    for (const request of node.requests) {
      const seen = `${request.url} ${request.rawHeaders.join(" ")} ${request.body}`;
      expect(seen).not.toContain("FN");
    }
    // what else the query said still goes
    expect(node.requests.map((request) => request.url)).toContain("/?trace=on");
  });

  it("is in no error body", async () => {
    for (const [label, path] of [
      ["eth", `/${KEYS.all}/`],
      ["bsc", `/${KEYS.ethOnly}/`],
      ["eth", `/${unknown}/`],
      ["eth", `/${KEYS.all}/%2e%2e/`],
      ["nowhere", `/${KEYS.all}/`],
    ] as const) {
      const r = await gw.call(label, path, { body: rpcBody("admin_peers") });
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.text).not.toMatch(/FN[A-Za-z0-9]{8}/);
    }
  });
});
