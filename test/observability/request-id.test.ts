import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE } from "../../src/config/defaults.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import {
  firstOf,
  jsonRpcResponder,
  type LoopbackNode,
  restResponder,
  startLoopbackNode,
} from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { rawRequest } from "../support/raw-http.js";

// A request id from caller to node (docs/operations.md, "Request ids"): every answer carries X-Request-Id,
// the caller's own when well-formed and a new one otherwise; the access line, every error body and the
// node's request carry the same id, so that a customer who quotes it lets an operator find the call.

// RFC 9562's layout, version 8 (src/http/request-id.ts)
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("request ids", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let wsNode: LoopbackWsNode;
  const line = (id: string) => gw.logs.find((l) => l.includes(`"requestId":"${id}"`));

  beforeAll(async () => {
    node = await startLoopbackNode(
      firstOf(
        jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1" }),
        restResponder({ "GET /v2/status": { "last-round": 7 } }),
      ),
    );
    wsNode = await startLoopbackWsNode({ results: { eth_blockNumber: "0x10" } });
    // algo's answers all reach its node; eth's head-independent ones may come from the cache
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, ws: wsNode.wsUrl }], algo: [node.url] },
      cache: { ...DEFAULT_CACHE, labels: { algo: { enabled: false } } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([node?.close(), wsNode?.close()]);
  });

  it("keeps a well-formed id of the caller's: on the answer, in the log line and in the node's request", async () => {
    const id = "01J9ZQ4X8Y2K-trace_7:abc";
    const answer = await gw.call("eth", `/${KEYS.all}`, {
      body: rpcBody("eth_blockNumber"),
      headers: { "x-request-id": id },
    });
    expect(answer.status).toBe(200);
    expect(answer.headers["x-request-id"]).toBe(id);
    expect(line(id)).toContain('"method":"eth_blockNumber"');
    expect(node.requests.at(-1)?.headers["x-request-id"]).toBe(id);
    // and a browser may read it
    expect(String(answer.headers["access-control-expose-headers"] ?? "")).toContain("x-request-id");
  });

  it("a gateway error's id may be read by a page too: the answer a customer quotes to support", async () => {
    const refused = await gw.call("algo", `/${KEYS.all}/v2/no-such-route`);
    expect(refused.status).toBe(404);
    expect(refused.headers["x-request-id"]).toMatch(UUID);
    expect(String(refused.headers["access-control-expose-headers"])).toContain("x-request-id");
  });

  it("makes one when the caller sent none, or one that is not well-formed", async () => {
    const made = new Set<string>();
    for (const given of [undefined, "has spaces in it", "x".repeat(129), "semi;colon"]) {
      const answer = await gw.call("algo", `/${KEYS.all}/v2/status`, {
        headers: given === undefined ? {} : { "x-request-id": given },
      });
      expect(answer.status).toBe(200);
      const id = String(answer.headers["x-request-id"]);
      expect(id).toMatch(UUID);
      // a relayed answer, not the cache's: a page's script reads the id too
      expect(String(answer.headers["access-control-expose-headers"])).toContain("x-request-id");
      made.add(id);
      expect(line(id)).toBeDefined();
      expect(node.requests.at(-1)?.headers["x-request-id"]).toBe(id);
    }
    expect(made.size).toBe(4);
  });

  it("makes one when the caller sent its own API key as its id: a key is never logged nor passed on", async () => {
    const answer = await gw.call("algo", `/${KEYS.all}/v2/status`, { headers: { "x-request-id": KEYS.all } });
    expect(answer.status).toBe(200);
    const id = String(answer.headers["x-request-id"]);
    expect(id).toMatch(UUID);
    expect(line(id)).toBeDefined();
    expect(node.requests.at(-1)?.headers["x-request-id"]).toBe(id);
    expect(gw.logs.filter((l) => l.includes(KEYS.all))).toEqual([]);
  });

  // a client behind a forward proxy sends an absolute-form target (http://host/key/...), whose key is as
  // much the key as an origin-form one's: it was echoed, logged and sent on
  it("makes one for a key sent as the id with an absolute-form target, over HTTP and on a WebSocket's handshake", async () => {
    const host = `eth.${DOMAIN}`;
    const body = rpcBody("eth_chainId");
    const answer = await rawRequest(
      gw.port,
      `POST http://${host}/${KEYS.all}/ HTTP/1.1\r\nHost: ${host}\r\nX-Request-Id: ${KEYS.all}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(answer.status).toBe(200);
    expect(String(answer.headers["x-request-id"])).toMatch(UUID);
    const upgraded = await rawRequest(
      gw.port,
      `GET http://${host}/${KEYS.all} HTTP/1.1\r\nHost: ${host}\r\nX-Request-Id: ${KEYS.all}\r\n` +
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
    );
    expect(upgraded.status).toBe(101);
    expect(String(upgraded.headers["x-request-id"])).toMatch(UUID);
    expect(gw.logs.filter((l) => l.includes(KEYS.all))).toEqual([]);
  });

  it("is in every error body: JSON-RPC data.requestId, a REST body's requestId, a batch's each refusal", async () => {
    const single = await gw.call("eth", `/${KEYS.all}`, { body: rpcBody("admin_peers") });
    const singleId = String(single.headers["x-request-id"]);
    expect((single.json as { error: { data: { requestId: string } } }).error.data.requestId).toBe(singleId);

    const batch = await gw.call("eth", `/${KEYS.all}`, {
      body: `[${rpcBody("eth_blockNumber", [], 1)},${rpcBody("admin_peers", [], 2)}]`,
    });
    const batchId = String(batch.headers["x-request-id"]);
    const refused = (batch.json as { id: number; error?: { data: { requestId: string } } }[]).find(
      (a) => a.id === 2,
    );
    expect(refused?.error?.data.requestId).toBe(batchId);

    const rest = await gw.call("algo", `/${KEYS.all}/v2/nothing-here`);
    expect(rest.status).toBe(404);
    expect((rest.json as { error: { requestId: string } }).error.requestId).toBe(
      rest.headers["x-request-id"],
    );

    const unauthorized = await gw.call("eth", "/FNnoSuchKey000000000000000000", {
      body: rpcBody("eth_chainId"),
    });
    expect(unauthorized.status).toBe(401);
    const id = String(unauthorized.headers["x-request-id"]);
    expect((unauthorized.json as { error: { data: { requestId: string } } }).error.data.requestId).toBe(id);
    expect(line(id)).toContain('"error":"UNAUTHORIZED"');
  });

  it("a batch's line names its size and its methods with their counts, refused calls as one count", async () => {
    const calls = [
      rpcBody("eth_blockNumber", [], 1),
      rpcBody("eth_chainId", [], 2),
      rpcBody("eth_blockNumber", [], 3),
      rpcBody("admin_peers", [], 4),
      rpcBody("not a method, and a secret FNabcdefabcdefabcdef", [], 5),
    ];
    const answer = await gw.call("eth", `/${KEYS.all}`, { body: `[${calls.join(",")}]` });
    const found = line(String(answer.headers["x-request-id"]));
    expect(found).toContain('"batch":5');
    expect(found).toContain('"methods":"eth_blockNumber×2 eth_chainId refused×2"');
    expect(found).not.toContain("secret");
  });

  it("is on a WebSocket's handshake, and on a refused upgrade's answer and body", async () => {
    const { WebSocket } = await import("ws");
    const opened = new WebSocket(`ws://127.0.0.1:${gw.port}/${KEYS.all}`, {
      headers: { host: `eth.${DOMAIN}`, "x-request-id": "ws-upgrade-1" },
    });
    const headers = await new Promise<Record<string, string | string[] | undefined>>((resolve, reject) => {
      opened.once("upgrade", (res) => resolve(res.headers));
      opened.once("error", reject);
    });
    opened.terminate();
    expect(headers["x-request-id"]).toBe("ws-upgrade-1");
    expect(
      gw.logs.some((l) => l.includes('"msg":"websocket open"') && l.includes('"requestId":"ws-upgrade-1"')),
    ).toBe(true);
    const refused = new WebSocket(`ws://127.0.0.1:${gw.port}/FNnoSuchKey000000000000000000`, {
      headers: { host: `eth.${DOMAIN}`, "x-request-id": "ws-refused-1" },
    });
    const answer = await new Promise<{ id: unknown; body: string }>((resolve) => {
      refused.once("error", () => {});
      refused.once("unexpected-response", (_req, res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => {
          body += chunk.toString();
        });
        res.on("end", () => resolve({ id: res.headers["x-request-id"], body }));
      });
    });
    refused.terminate();
    expect(answer.id).toBe("ws-refused-1");
    expect(JSON.parse(answer.body).error.data.requestId).toBe("ws-refused-1");
  });

  it("is on an answer the cache gave", async () => {
    await gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_chainId") });
    const hit = await gw.call("eth", `/${KEYS.all}`, {
      body: rpcBody("eth_chainId"),
      headers: { "x-request-id": "cached-1" },
    });
    expect(hit.headers["x-cache"]).toBe("hit");
    expect(hit.headers["x-request-id"]).toBe("cached-1");
  });
});
