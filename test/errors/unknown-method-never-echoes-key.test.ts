import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A key never appears in an error body (docs/operations.md). A refusal of an unknown method names the
// method it was sent (data.method; nearcore's info.method_name), but not a key: a client that sends its
// key where the method goes (`provider.send(apiKey)`, a method read from the wrong config field) must not
// get it back in a body that SDKs, browser consoles and proxies log. As with an X-Request-Id that carries
// the key (http/request-id.ts), the key's text is left out and the rest of the name is kept.
const KEY = KEYS.all;

describe("an unknown method that is, or holds, the key", () => {
  let node: LoopbackNode;
  let wsNode: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1" }));
    wsNode = await startLoopbackWsNode({ results: { eth_blockNumber: "0x10", eth_chainId: "0x1" } });
    gw = await startGateway({ upstreams: { eth: [{ url: node.url, ws: wsNode.wsUrl }], near: [node.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([node?.close(), wsNode?.close()]);
    restore?.();
  });

  it("is refused without the key in the body, over HTTP, in a batch and in nearcore's form", async () => {
    for (const method of [KEY, `${KEY}_getBalance`, `eth.${KEY}`]) {
      const single = await gw.call("eth", `/${KEY}/`, { body: rpcBody(method) });
      expect(single.status).toBe(403);
      expect(single.text).toContain("METHOD_NOT_FOUND");
      expect(single.text).not.toContain(KEY);
      const batch = await gw.call("eth", `/${KEY}/`, {
        body: `[${rpcBody(method, [], 1)},${rpcBody("eth_blockNumber", [], 2)}]`,
      });
      expect(batch.text).toContain("METHOD_NOT_FOUND");
      expect(batch.text).not.toContain(KEY);
      const near = await gw.call("near", `/${KEY}/`, { body: rpcBody(method) });
      expect(near.text).toContain("REQUEST_VALIDATION_ERROR");
      expect(near.text).not.toContain(KEY);
    }
  });

  it("is refused without the key over a WebSocket", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEY}`);
    try {
      const answer = await client.call(KEY);
      expect(JSON.stringify(answer)).toContain("METHOD_NOT_FOUND");
      expect(JSON.stringify(answer)).not.toContain(KEY);
    } finally {
      client.close();
    }
  });

  it("a method name without a key is still named", async () => {
    const answer = await gw.call("eth", `/${KEY}/`, { body: rpcBody("eth_getBalanceX") });
    expect((answer.json as { error: { data: { method: string } } }).error.data.method).toBe(
      "eth_getBalanceX",
    );
  });
});
