import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_TRACING } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../support/otlp-receiver.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A WebSocket's traces (docs/operations.md, "Traces"): the upgrade is a span, joined to the caller's
// traceparent and passed on in the node's handshake with the request id; each message of a sampled
// connection is a span under it, ending when the node's answer comes; no key anywhere.

const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN = "b7ad6b7169203331";
const attr = (span: ReceivedSpan, name: string) => span.attributes[name];

describe("WebSocket traces", () => {
  let receiver: OtlpReceiver;
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    receiver = await startOtlpReceiver();
    node = await startLoopbackWsNode(evmNode({ eth_blockNumber: "0x10" }));
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, name: "ws-node" }] },
      tracing: { ...DEFAULT_TRACING, enabled: true, endpoint: receiver.url, sampleRatio: 1 },
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await node?.close();
    restore?.();
  });

  it("traces the upgrade under the caller's trace, each message under it, and passes the trace to the node's handshake", async () => {
    const url = `ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`;
    const client = await Client.open(url, {
      traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`,
      "x-request-id": "ws-upgrade-1",
    });
    expect((await client.call("eth_blockNumber")).result).toBe("0x10");
    const refused = await client.call("admin_peers");
    // a refused message's error names the connection's request id, as an HTTP refusal names its own
    expect(refused.error).toMatchObject({ data: { requestId: "ws-upgrade-1" } });
    client.close();
    await gw.close();

    const spans = receiver.spans();
    const upgrade = spans.find((s) => attr(s, "gateway.request_id") === "ws-upgrade-1");
    expect(upgrade).toMatchObject({
      traceId: TRACE_ID,
      parentSpanId: CALLER_SPAN,
      name: "eth websocket",
      attributes: { "gateway.result": "ok", "http.response.status_code": 101, "gateway.upstream": "ws-node" },
    });
    const messages = spans.filter((s) => s.parentSpanId === upgrade?.spanId);
    expect(messages.map((s) => [s.name, attr(s, "gateway.result"), attr(s, "gateway.error_code")])).toEqual([
      ["eth eth_blockNumber", "ok", undefined],
      ["eth other", "client", "METHOD_NOT_FOUND"],
    ]);
    const handshake = node.connections[0]?.headers;
    expect(handshake?.["x-request-id"]).toBe("ws-upgrade-1");
    expect(handshake?.traceparent).toBe(`00-${TRACE_ID}-${upgrade?.spanId}-01`);
    expect(receiver.bodies.join("\n")).not.toContain("FNtest");
  });
});

describe("a traced WebSocket message whose node went before it answered", () => {
  let receiver: OtlpReceiver;
  let a: LoopbackWsNode;
  let b: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    receiver = await startOtlpReceiver();
    // a never answers the write: its socket is lost with the write in flight
    a = await startLoopbackWsNode(evmNode({ eth_sendRawTransaction: () => new Promise(() => {}) }));
    b = await startLoopbackWsNode(evmNode());
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b", tier: "fallback" },
        ],
      },
      tracing: { ...DEFAULT_TRACING, enabled: true, endpoint: receiver.url, sampleRatio: 1 },
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await b?.close();
    restore?.();
  });

  it("ends with WRITE_NOT_CONFIRMED when it held only a write, which is not sent again", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`, {
      "x-request-id": "ws-move-1",
    });
    client.send('{"jsonrpc":"2.0","id":"write","method":"eth_sendRawTransaction","params":["0x02f8"]}');
    await eventually(() => a.methods().includes("eth_sendRawTransaction"), 3_000, "the write at a");
    await a.close();
    expect((await client.answerTo('"write"')).error?.data?.code).toBe("WRITE_NOT_CONFIRMED");
    client.close();
    await gw.close();
    const spans = receiver.spans();
    const upgrade = spans.find((s) => attr(s, "gateway.request_id") === "ws-move-1");
    const messages = spans.filter((s) => s.parentSpanId === upgrade?.spanId);
    expect(messages.map((s) => [s.name, attr(s, "gateway.error_code")])).toEqual([
      ["eth eth_sendRawTransaction", "WRITE_NOT_CONFIRMED"],
    ]);
    expect(b.methods()).not.toContain("eth_sendRawTransaction");
  });
});
