import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import {
  evmNode,
  type LoopbackWsNode,
  startLoopbackWsNode,
  type WsCall,
} from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A node answers with a null id what it could not pair with a call: geth's -32700 "parse error", or a
// limiter in front of it refusing the message. The caller's SDK pairs answers by id, so such an answer
// reached no call and the call waited for ever; with one message in flight it is that message's answer,
// each of its calls by its own id.

const REFUSED = '{"code":-32005,"message":"limit exceeded"}';

describe("a node's error with a null id on a WebSocket", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    // a limiter before the node refuses eth_getBalance with an error it does not pair with the call: once
    // per message, a batch's too (this node calls this for each of a batch's calls: "y" is the second)
    const refuse = (_params: unknown, call: WsCall) => {
      if (call.id !== '"y"') call.connection.send(`{"jsonrpc":"2.0","id":null,"error":${REFUSED}}`);
      return new Promise(() => {});
    };
    node = await startLoopbackWsNode(evmNode({ eth_getBalance: refuse }));
    gw = await startGateway({ upstreams: { eth: [node.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("answers the one message in flight by its calls' ids, alone or in a batch", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const single = await client.call("eth_getBalance", [`0x${"aa".repeat(20)}`, "latest"]);
    expect(single.error).toEqual(JSON.parse(REFUSED));
    client.send(
      `[{"jsonrpc":"2.0","id":"x","method":"eth_getBalance","params":["0x${"aa".repeat(20)}","latest"]},{"jsonrpc":"2.0","id":"y","method":"eth_getBalance","params":["0x${"bb".repeat(20)}","latest"]}]`,
    );
    const batch = JSON.parse(await client.waitFor((t) => t.startsWith("["))) as {
      id: string;
      error: unknown;
    }[];
    expect(batch).toEqual([
      { jsonrpc: "2.0", id: "x", error: JSON.parse(REFUSED) },
      { jsonrpc: "2.0", id: "y", error: JSON.parse(REFUSED) },
    ]);
    // the connection goes on
    expect((await client.call("eth_blockNumber", [])).error).toBeUndefined();
    client.close();
  });
});
