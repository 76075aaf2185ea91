import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import {
  evmNode,
  type LoopbackWsNode,
  startLoopbackWsNode,
  WsRpcError,
} from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A read that needs an archive node, by a key with archive access, where the archive label has no upstream:
// docs/errors.md says NO_UPSTREAM's `data.archiveLabel` names that label, and an HTTP caller's answer has it.
// Over a WebSocket the refusal's words were written a second time (ws/archive-reads.ts), without the label.

describe("an archive read with no archive upstream, over a WebSocket", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  const address = `0x${"ab".repeat(20)}`;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(
      evmNode({
        eth_getBalance: (params: unknown) => {
          if ((params as string[])[1] === "0x10")
            throw new WsRpcError(-32000, "missing trie node 1f2e3d (path )");
          return "0x2a";
        },
      }),
    );
    gw = await startGateway({ upstreams: { eth: [node.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("names the archive label as the same read over HTTP does", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const overSocket = (await client.call("eth_getBalance", [address, "0x10"])).error as {
      data: Record<string, unknown>;
    };
    client.close();
    const overHttp = await request(`http://127.0.0.1:${gw.port}/${KEYS.all}/`, {
      method: "POST",
      headers: { host: `eth.${DOMAIN}`, "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [address, "0x10"] }),
    });
    const http = ((await overHttp.body.json()) as { error: { data: Record<string, unknown> } }).error;
    expect(http.data).toMatchObject({ code: "NO_UPSTREAM", archiveLabel: "eth-archive" });
    expect(overSocket.data).toMatchObject({ code: "NO_UPSTREAM", archiveLabel: "eth-archive" });
    expect(overSocket.data.reason).toBe(http.data.reason);
  });
});
