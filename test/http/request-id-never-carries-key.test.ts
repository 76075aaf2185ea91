import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestIdFor } from "../../src/http/request-id.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// docs/operations.md, "Request ids": the caller's well-formed X-Request-Id is the answer's, the access
// line's, the node's and the span's, but never when it carries the request's API key, which is never logged
// nor passed on. An app that tags its calls `app-<key>-42` gets a new id, as one that sends its key alone.
const id = (given: string, target: string) => requestIdFor(["X-Request-Id", given], target);
const KEY = KEYS.all;

describe("requestIdFor", () => {
  it("keeps a well-formed id that carries no key", () => {
    for (const given of ["01J9ZK3M4Q8R7T6V5W4X3Y2Z1A", "5f0c7a1e-2b3d-4c5e-8f90-a1b2c3d4e5f6", "app.call:42"])
      expect(id(given, `/${KEY}/`)).toBe(given);
    // a key's shape inside a word (a base32 id may hold one) is no key
    expect(id("01J9FNZK3M4Q8R7T6V5W4X3Y2Z", "/")).toBe("01J9FNZK3M4Q8R7T6V5W4X3Y2Z");
  });

  it("makes a new one for an id that is, or holds, the request's key", () => {
    for (const given of [KEY, `app-${KEY}-42`, `app${KEY}`, `${KEY}:1`])
      for (const target of [`/${KEY}`, `/${KEY}/ext/bc/C/rpc?x=1`, `http://eth.example/${KEY}/`])
        expect(id(given, target)).not.toContain(KEY);
  });

  it("makes a new one for an id holding a key's shape where a word starts, on a keyless call", () => {
    expect(id(`app-${KEY}-42`, `/?apikey=${KEY}`)).not.toContain(KEY);
    expect(id(`app-${KEY}-42`, "/")).not.toContain(KEY);
  });
});

describe("an X-Request-Id that carries the key, over HTTP and a WebSocket", () => {
  let node: LoopbackNode;
  let wsNode: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  const given = `app-${KEY}-42`;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1" }));
    wsNode = await startLoopbackWsNode({ results: { eth_blockNumber: "0x10", eth_chainId: "0x1" } });
    gw = await startGateway({ upstreams: { eth: [{ url: node.url, ws: wsNode.wsUrl }] } });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([node?.close(), wsNode?.close()]);
    restore?.();
  });

  it("is not echoed, logged, or sent to the node with a call", async () => {
    const seen = gw.logs.length;
    const res = await gw.call("eth", `/${KEY}/`, {
      body: rpcBody("eth_blockNumber"),
      headers: { "x-request-id": given },
    });
    expect(res.status).toBe(200);
    expect(String(res.headers["x-request-id"])).not.toContain(KEY);
    await eventually(
      () => gw.logs.slice(seen).some((line) => line.includes('"requestId"')),
      2_000,
      "access line",
    );
    expect(gw.logs.slice(seen).filter((line) => line.includes(KEY))).toEqual([]);
    const sent = node.requests.map((r) => JSON.stringify(r.headers)).join("\n");
    expect(sent).toContain("x-request-id");
    expect(sent).not.toContain(KEY);
  });

  it("is not logged nor sent in the node's handshake with a WebSocket", async () => {
    const seen = gw.logs.length;
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEY}`, { "x-request-id": given });
    expect((await client.call("eth_blockNumber")).result).toBe("0x10");
    client.close();
    await eventually(
      () => gw.logs.slice(seen).some((line) => line.includes('"websocket open"')),
      2_000,
      "open line",
    );
    expect(gw.logs.slice(seen).filter((line) => line.includes(KEY))).toEqual([]);
    const handshakes = wsNode.connections.map((c) => JSON.stringify(c.headers)).join("\n");
    expect(handshakes).toContain("x-request-id");
    expect(handshakes).not.toContain(KEY);
  });
});
