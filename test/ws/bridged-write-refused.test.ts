import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type SeenRequest, startLoopbackNode } from "../support/loopback-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A write on a WebSocket whose node has no WebSocket server (registry `webSocketOverHttp`): each message is
// a POST to the node. When that node refuses the connection, the write reached no node, as over HTTP,
// where it goes on to the next node (docs/upstreams.md, "Retries: reads and writes"). It was answered
// WRITE_NOT_CONFIRMED ("the upstream node took the write"), which sends the caller to look up a
// transaction no node has. Two loopback nearcore nodes; `a` is down before the write, and the probes have
// not seen it yet. nearcore answers a send_tx with wait_until NONE with its final_execution_status alone
// (chain/jsonrpc-primitives types/transactions.rs RpcTransactionResponse).

const near = endpointsByLabel.get("near");
if (near === undefined) throw new Error("no near in the registry");
const HEIGHT = 9000;

const sendTx = (request: SeenRequest) => {
  if (!request.body.includes('"send_tx"')) return undefined;
  const id = /"id":("[^"]*"|\d+)/.exec(request.body)?.[1] ?? "null";
  return { body: `{"jsonrpc":"2.0","result":{"final_execution_status":"NONE"},"id":${id}}` };
};

describe("a bridged WebSocket's write whose node refuses the connection", () => {
  let a: LoopbackNode;
  let b: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void;
  const sent = (node: LoopbackNode) => node.requests.filter((r) => r.body.includes('"send_tx"')).length;
  const state = (name: string) =>
    gw.gateway.upstreams.group("near", "/")?.members.find((m) => m.name === name)?.health.state;

  beforeAll(async () => {
    restore = resolveTestHosts();
    a = await startLoopbackNode(firstOf(sendTx, softwareNode(near, nodeState(near, HEIGHT))));
    b = await startLoopbackNode(firstOf(sendTx, softwareNode(near, nodeState(near, HEIGHT))));
    gw = await startGateway({
      upstreams: {
        near: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b", tier: "fallback" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await eventually(() => state("a") === "healthy" && state("b") === "healthy", 5_000, "both nodes probed");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.close(), b?.close()]);
    restore?.();
  });

  it("goes to the next node, once, and the caller gets that node's answer", async () => {
    const client = await Client.open(`ws://near.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      await a.close();
      client.send(
        '{"jsonrpc":"2.0","id":"w","method":"send_tx","params":{"signed_tx_base64":"AAAA","wait_until":"NONE"}}',
      );
      const answer = await client.answerTo('"w"');
      expect(answer.error, JSON.stringify(answer)).toBeUndefined();
      expect(answer.result).toEqual({ final_execution_status: "NONE" });
      expect([sent(a), sent(b)]).toEqual([0, 1]);
      expect(client.isOpen).toBe(true);
    } finally {
      client.close();
    }
  });
});
