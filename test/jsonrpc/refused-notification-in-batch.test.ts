// JSON-RPC 2.0 §4.1: "The Server MUST NOT reply to a Notification, including those that are within a batch
// request"; §6: with nothing to answer, no empty array. geth (rpc/handler.go) answers nothing for a
// notification, even one of a method it does not have. A notification the gateway refuses inside a batch is
// counted and charged as any refused call, but gets no `"id":null` error element, over HTTP and WebSocket.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

/** Refused at the gateway: a node-admin method, never relayed (METHOD_NOT_FOUND). */
const REFUSED_NOTIFICATION = '{"jsonrpc":"2.0","method":"admin_peers","params":[]}';
const NOTIFICATION = '{"jsonrpc":"2.0","method":"eth_chainId","params":[]}';
const CALL = '{"jsonrpc":"2.0","id":2,"method":"eth_chainId","params":[]}';

describe("a refused notification in a batch", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(evmNode());
    gw = await startGateway({ upstreams: { eth: [node.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  const post = (body: string) => gw.call("eth", `/${KEYS.all}`, { body });
  /** The access line of the last batch: its calls and how many the gateway refused. */
  const lastBatchLine = () => {
    const line = gw.logs.filter((l) => l.includes('"batch":')).at(-1) ?? "{}";
    const { batch, refused } = JSON.parse(line) as { batch?: number; refused?: number };
    return { batch, refused };
  };

  it("HTTP: no answer element for it; the call with an id gets its own; it is counted as refused", async () => {
    const answer = await post(`[${REFUSED_NOTIFICATION},${CALL}]`);
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual([{ jsonrpc: "2.0", id: 2, result: "0x1" }]);
    expect(lastBatchLine()).toEqual({ batch: 2, refused: 1 });
  });

  it("HTTP: refused notifications only: an empty 200, as geth answers a batch of notifications", async () => {
    const before = node.httpMethods.length;
    const answer = await post(`[${REFUSED_NOTIFICATION},${REFUSED_NOTIFICATION}]`);
    expect([answer.status, answer.text]).toEqual([200, ""]);
    expect(node.httpMethods.length).toBe(before);
    expect(lastBatchLine()).toEqual({ batch: 2, refused: 2 });
  });

  it("HTTP: with a notification that went, the node's own answer to it, unchanged", async () => {
    const alone = await post(`[${NOTIFICATION}]`);
    const before = node.httpMethods.length;
    const answer = await post(`[${REFUSED_NOTIFICATION},${NOTIFICATION}]`);
    expect([answer.status, answer.text]).toEqual([alone.status, alone.text]);
    expect(node.httpMethods.slice(before)).toEqual(["eth_chainId"]);
  });

  it("HTTP: an invalid request object without an id is still answered, with id null (§5)", async () => {
    const answer = await post(`[{"jsonrpc":"2.0","params":[]},${CALL}]`);
    const ids = (answer.json as { id: unknown }[]).map((a) => a.id);
    expect(ids.sort()).toEqual([2, null]);
  });

  it("WebSocket: no answer element for it, and nothing at all for refused notifications only", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      client.send(`[${REFUSED_NOTIFICATION},${CALL}]`);
      const first = await client.waitFor((t) => t.startsWith("["));
      expect(JSON.parse(first)).toEqual([{ jsonrpc: "2.0", id: 2, result: "0x1" }]);
      // the next message the client gets is the answer to the call after: none came for the batch between
      client.send(`[${REFUSED_NOTIFICATION}]`);
      client.send('{"jsonrpc":"2.0","id":3,"method":"eth_chainId","params":[]}');
      await client.answerTo("3");
      expect(client.received.slice(1).map((t) => JSON.parse(t) as unknown)).toEqual([
        { jsonrpc: "2.0", id: 3, result: "0x1" },
      ]);
    } finally {
      client.close();
    }
  });
});
