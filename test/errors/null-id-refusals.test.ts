import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../registry/helpers.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway, TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// docs/errors.md says which refusals answer `"id": null` rather than the request's own id token. Two that
// the gateway answers so were not among them: a body refused whole for a member named twice or an envelope
// member in another case (the id is readable, yet another reading of the bytes could see another one), and
// a batch of notifications only that the rate, the quota or the nodes cannot hold (the error alone at its
// status, where the docs said such a batch gets an empty 200, or nothing on a WebSocket).

const SLOW = "FNnullIdSlow000000000000000000a";
const docs = readFileSync(join(ROOT, "docs/errors.md"), "utf8").replace(/\s+/g, " ");

describe("refusals answered with id null, as docs/errors.md says", () => {
  let node: LoopbackNode;
  let ws: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void = () => {};
  const post = (key: string, body: string) => gw.call("eth", `/${key}`, { body });

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    ws = await startLoopbackWsNode({ results: { eth_blockNumber: "0x10" } });
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, ws: ws.wsUrl }] },
      keys: [...TEST_KEYS, { key: SLOW, networks: "*", rate: { perSecond: 0.001, burst: 1 } }],
    });
  });
  afterAll(async () => {
    restore();
    await gw?.close();
    await Promise.all([node?.close(), ws?.close()]);
  });

  it("a member named twice, or an envelope member in another case: the body is refused whole, id null", async () => {
    const twice = await post(KEYS.all, '{"jsonrpc":"2.0","id":5,"method":"eth_blockNumber","method":"x"}');
    expect([twice.status, (twice.json as { id: unknown }).id]).toEqual([400, null]);
    const cased = await post(KEYS.all, '{"jsonrpc":"2.0","id":5,"method":"eth_blockNumber","Method":"x"}');
    expect([cased.status, (cased.json as { id: unknown }).id]).toEqual([400, null]);
    const batch = await post(
      KEYS.all,
      '[{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"},{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber","method":"x"}]',
    );
    expect(batch.status).toBe(400);
    expect(batch.json).toMatchObject({ id: null, error: { data: { code: "DUPLICATE_MEMBER" } } });
    expect(docs).toMatch(/`null` when[^.]*`DUPLICATE_MEMBER`/);
  });

  it("notifications only, over the rate: the error alone with id null, at 429, over HTTP and a WebSocket", async () => {
    // opened while the key has its call left: an upgrade of a key over its rate is refused (docs/websocket.md)
    const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${SLOW}`);
    try {
      expect((await post(SLOW, '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}')).status).toBe(200);
      const refused = await post(SLOW, '[{"jsonrpc":"2.0","method":"eth_blockNumber"}]');
      expect(refused.status).toBe(429);
      expect(refused.headers["retry-after"]).toBeDefined();
      expect(refused.json).toMatchObject({ id: null, error: { data: { code: "RATE_LIMITED" } } });
      socket.ws.send('[{"jsonrpc":"2.0","method":"eth_blockNumber"}]');
      await eventually(() => socket.received.length > 0, 5_000, "the socket's answer");
      expect(JSON.parse(socket.received[0] as string)).toMatchObject({
        id: null,
        error: { data: { code: "RATE_LIMITED" } },
      });
    } finally {
      socket.ws.close();
    }
    expect(docs).toMatch(/notifications only[^.]*the rate[^.]*`id` `null`/);
  });
});
