import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_LIMITS, DEFAULT_TRACING } from "../../src/config/defaults.js";
import type { LabelUpstreams } from "../../src/config/types.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../support/otlp-receiver.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { typicalCalls, typicalRequest } from "../support/typical-calls.js";

// Traces never hold a key (docs/operations.md, "Traces"): every label of the registry, behind a loopback node
// of its software whose URL carries credentials and a secret path segment, gets keyed traffic with a query
// string and secret-bearing headers; an in-process OTLP receiver takes the gateway's spans, and no export
// holds the key, its id, the path, the query, a header of the caller's or the node's credentials.

const CREDENTIAL = "nodeCredentialS3cret";
const PATH_SECRET = "pathSecret0123456789abcdef";
const HEADER_SECRET = "callerHeaderSecret42";
const QUERY_SECRET = "querySecret77";
const UNKNOWN_KEY = "FNnotAKeyOfAnyAccount000000000";
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";

const attr = (span: ReceivedSpan, name: string) => span.attributes[name];

describe("traces never hold a key (every family, an in-process OTLP receiver)", () => {
  let receiver: OtlpReceiver;
  let gw: RunningGateway;
  const nodes = new Map<string, LoopbackNode>();
  const labels = [...endpointsByLabel.values()].filter((e) => e.mounts.length > 0);

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    const upstreams: Record<string, LabelUpstreams> = {};
    await Promise.all(
      labels.map(async (endpoint) => {
        const base = `/base/${PATH_SECRET}`;
        const node = await startLoopbackNode(softwareNode(endpoint, nodeState(endpoint, 1_000), [base]));
        nodes.set(endpoint.label, node);
        const url = `http://operator:${CREDENTIAL}@127.0.0.1:${node.port}${base}`;
        upstreams[endpoint.label] =
          endpoint.mounts.length === 1
            ? [url]
            : Object.fromEntries(endpoint.mounts.map((m) => [m.path, [url]]));
      }),
    );
    gw = await startGateway({
      upstreams,
      cache: { ...DEFAULT_CACHE, enabled: true },
      tracing: { ...DEFAULT_TRACING, enabled: true, endpoint: receiver.url, sampleRatio: 1 },
    });
    const secretHeaders = {
      "x-client-secret": HEADER_SECRET,
      cookie: `session=${HEADER_SECRET}`,
      "user-agent": `agent/${HEADER_SECRET}`,
      tracestate: `vendor=${HEADER_SECRET}`,
      baggage: `user=${HEADER_SECRET}`,
    };
    for (const endpoint of labels) {
      for (const call of typicalCalls(endpoint)) {
        const request = typicalRequest(call, 1);
        const send = (key: string, query = "") =>
          gw.call(endpoint.label, `/${key}${call.path}${query}`, {
            method: request.method,
            ...(request.body === undefined ? {} : { body: request.body }),
            headers: { "content-type": "application/json", ...secretHeaders },
          });
        // twice, for the cache's hit; with a query string; with a key no account has
        await send(KEYS.all);
        await send(KEYS.all);
        await send(KEYS.all, `?${QUERY_SECRET}=${QUERY_SECRET}`);
        await send(UNKNOWN_KEY);
      }
    }
    // a refused method, and a call that joins the caller's trace
    await gw.call("eth", `/${KEYS.ethOnly}/`, { body: rpcBody("admin_peers") });
    await gw.call("eth", `/${KEYS.all}/`, {
      body: rpcBody("eth_chainId"),
      headers: {
        traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`,
        tracestate: `vendor=${HEADER_SECRET}`,
        "x-request-id": "traced-call-1",
      },
    });
    // a batch of calls the cache holds (the call above read eth_chainId)
    const batch = JSON.stringify(
      [1, 2].map((id) => ({ jsonrpc: "2.0", id, method: "eth_chainId", params: [] })),
    );
    for (const id of ["traced-batch-1", "traced-batch-2"])
      await gw.call("eth", `/${KEYS.all}/`, {
        body: batch,
        headers: { "content-type": "application/json", "x-request-id": id },
      });
    // closing sends what is queued
    await gw.close();
  }, 60_000);
  afterAll(async () => {
    await receiver?.close();
    await Promise.all([...nodes.values()].map((node) => node.close()));
  });

  it("exports a request span for every label, with an attempt span under it naming the node without secrets", () => {
    const spans = receiver.spans();
    for (const endpoint of labels) {
      const requests = spans.filter(
        (s) => attr(s, "gateway.label") === endpoint.label && attr(s, "gateway.result") === "ok",
      );
      expect(requests.length, endpoint.label).toBeGreaterThan(0);
      const attempts = spans.filter(
        (s) => s.name === "upstream attempt" && requests.some((r) => r.spanId === s.parentSpanId),
      );
      expect(attempts.length, endpoint.label).toBeGreaterThan(0);
      const port = nodes.get(endpoint.label)?.port;
      expect(attempts[0]?.attributes).toMatchObject({
        "gateway.upstream": `http://127.0.0.1:${port}/base/…`,
        "gateway.attempt": "first",
        "gateway.outcome": "answered",
      });
    }
    // the cache's lookups, with what they found
    const lookups = spans.filter((s) => s.name === "cache lookup").map((s) => attr(s, "gateway.cache"));
    expect(lookups).toContain("hit");
    expect(lookups).toContain("miss");
    // a batch's lookup too: a hit when none of its calls went to a node
    const batch = spans.find((s) => attr(s, "gateway.request_id") === "traced-batch-2");
    const batchLookup = spans.find((s) => s.name === "cache lookup" && s.parentSpanId === batch?.spanId);
    expect(batchLookup?.attributes["gateway.cache"]).toBe("hit");
    // refusals are traced too, with the error's code
    expect(spans.map((s) => attr(s, "gateway.error_code"))).toEqual(
      expect.arrayContaining(["UNAUTHORIZED", "METHOD_NOT_FOUND"]),
    );
  });

  it("holds no key, key id, path, query, caller header or node credential in any span, attribute, event or resource", () => {
    expect(receiver.bodies.length).toBeGreaterThan(0);
    const exported = receiver.bodies.join("\n");
    for (const secret of [
      ...Object.values(KEYS),
      UNKNOWN_KEY,
      // a key's id is its first characters: not even those
      "FNtest",
      "FNnotA",
      CREDENTIAL,
      PATH_SECRET,
      HEADER_SECRET,
      QUERY_SECRET,
    ])
      expect(exported, secret).not.toContain(secret);
  });

  it("honours the caller's traceparent, passes its trace to the node under the attempt's span, and nothing else of the caller's", () => {
    const spans = receiver.spans();
    const request = spans.find((s) => attr(s, "gateway.request_id") === "traced-call-1");
    expect(request).toMatchObject({ traceId: TRACE_ID, parentSpanId: CALLER_SPAN });
    const attempt = spans.find((s) => s.parentSpanId === request?.spanId && s.name === "upstream attempt");
    expect(attempt?.traceId).toBe(TRACE_ID);
    const seen = nodes.get("eth")?.requests.find((r) => r.headers["x-request-id"] === "traced-call-1");
    expect(seen?.headers.traceparent).toBe(`00-${TRACE_ID}-${attempt?.spanId}-01`);
    expect(seen?.headers.tracestate).toBeUndefined();
    expect(seen?.headers.baggage).toBeUndefined();
  });
});

describe("attempt spans: a retry after a node's 503, a hedge past a slow node", () => {
  it("names each attempt's node, why it was made and how it ended", async () => {
    const receiver = await startOtlpReceiver();
    const ok = jsonRpcResponder({ eth_chainId: "0x1" });
    const busy = await startLoopbackNode(() => ({ status: 503, body: "busy" }));
    // a node that takes 600 ms over each answer: the node's own slowness, which the hedge goes around
    const slow = await startLoopbackNode(async (request) => {
      await new Promise((resolve) => setTimeout(resolve, 600));
      return ok(request);
    });
    const [answersA, answersB] = await Promise.all([startLoopbackNode(ok), startLoopbackNode(ok)]);
    const gw = await startGateway({
      upstreams: {
        eth: [
          { url: busy.url, name: "busy" },
          { url: answersA.url, name: "answers-a" },
        ],
        bsc: [
          { url: slow.url, name: "slow" },
          { url: answersB.url, name: "answers-b" },
        ],
      },
      limits: { upstream: { ...DEFAULT_LIMITS.upstream, hedgeMinMs: 50, hedgeMaxMs: 100 } },
      tracing: { ...DEFAULT_TRACING, enabled: true, endpoint: receiver.url, sampleRatio: 1 },
    });
    for (let i = 0; i < 4; i++) {
      expect((await gw.call("eth", `/${KEYS.all}/`, { body: rpcBody("eth_chainId") })).status).toBe(200);
      expect((await gw.call("bsc", `/${KEYS.all}/`, { body: rpcBody("eth_chainId") })).status).toBe(200);
    }
    await gw.close();
    await Promise.all([busy, slow, answersA, answersB, receiver].map((s) => s.close()));
    const attempts = receiver
      .spans()
      .filter((s) => s.name === "upstream attempt")
      .map((s) => [
        attr(s, "gateway.upstream"),
        attr(s, "gateway.attempt"),
        attr(s, "gateway.outcome"),
        attr(s, "gateway.failure"),
      ]);
    expect(attempts).toContainEqual(["busy", "first", "failed", "status"]);
    expect(attempts).toContainEqual(["answers-a", "retry", "answered", undefined]);
    expect(attempts).toContainEqual(["slow", "first", "dismissed", undefined]);
    expect(attempts).toContainEqual(["answers-b", "hedge", "answered", undefined]);
  });
});

describe("sampling per label, and tracing off", () => {
  let receiver: OtlpReceiver;
  let node: LoopbackNode;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    const eth = endpointsByLabel.get("eth");
    if (eth === undefined) throw new Error("no eth label");
    node = await startLoopbackNode(softwareNode(eth, nodeState(eth, 1_000)));
  });
  afterAll(async () => {
    await receiver?.close();
    await node?.close();
  });

  it("traces a label at its own ratio, and a caller's sampled trace on any label", async () => {
    const gw = await startGateway({
      upstreams: { eth: [node.url], bsc: [node.url] },
      tracing: {
        ...DEFAULT_TRACING,
        enabled: true,
        endpoint: receiver.url,
        sampleRatio: 0,
        labels: { eth: 1 },
      },
    });
    for (let i = 0; i < 5; i++) {
      await gw.call("eth", `/${KEYS.all}/`, { body: rpcBody("eth_blockNumber") });
      await gw.call("bsc", `/${KEYS.all}/`, { body: rpcBody("eth_blockNumber") });
    }
    await gw.call("bsc", `/${KEYS.all}/`, {
      body: rpcBody("eth_blockNumber"),
      headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
    });
    // not sampled by the caller: not traced on eth either, and the node still joins the caller's trace
    await gw.call("eth", `/${KEYS.all}/`, {
      body: rpcBody("eth_blockNumber"),
      headers: { traceparent: `00-${"1".repeat(32)}-${CALLER_SPAN}-00`, "x-request-id": "unsampled-1" },
    });
    await gw.close();
    const requests = receiver.spans().filter((s) => s.name.endsWith(" eth_blockNumber"));
    expect(requests.filter((s) => attr(s, "gateway.label") === "eth")).toHaveLength(5);
    expect(requests.filter((s) => attr(s, "gateway.label") === "bsc").map((s) => s.traceId)).toEqual([
      TRACE_ID,
    ]);
    const unsampled = node.requests.find((r) => r.headers["x-request-id"] === "unsampled-1");
    expect(unsampled?.headers.traceparent).toMatch(new RegExp(`^00-${"1".repeat(32)}-[0-9a-f]{16}-00$`));
  });

  it("with followCallerSampling off, a caller's sampled trace is kept at its label's ratio", async () => {
    const before = receiver.spans().length;
    const gw = await startGateway({
      upstreams: { eth: [node.url], bsc: [node.url] },
      tracing: {
        ...DEFAULT_TRACING,
        enabled: true,
        endpoint: receiver.url,
        sampleRatio: 0,
        labels: { eth: 1 },
        followCallerSampling: false,
      },
    });
    const sampled = { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` };
    const unsampled = { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-00` };
    await gw.call("bsc", `/${KEYS.all}/`, { body: rpcBody("eth_blockNumber"), headers: sampled });
    await gw.call("eth", `/${KEYS.all}/`, { body: rpcBody("eth_blockNumber"), headers: unsampled });
    await gw.close();
    const labels = receiver
      .spans()
      .slice(before)
      .flatMap((s) => (s.parentSpanId === CALLER_SPAN ? [attr(s, "gateway.label")] : []));
    expect(labels).toEqual(["eth"]);
  });

  it("off (the default), exports nothing and passes the caller's traceparent to the node as it came", async () => {
    const before = receiver.bodies.length;
    const gw = await startGateway({
      upstreams: { eth: [node.url] },
      tracing: { ...DEFAULT_TRACING, endpoint: receiver.url, sampleRatio: 1 },
    });
    const parent = `00-${TRACE_ID}-${CALLER_SPAN}-01`;
    await gw.call("eth", `/${KEYS.all}/`, {
      body: rpcBody("eth_blockNumber"),
      headers: { traceparent: parent, tracestate: "a=b", "x-request-id": "off-1" },
    });
    // a malformed one is not passed on
    await gw.call("eth", `/${KEYS.all}/`, {
      body: rpcBody("eth_blockNumber"),
      headers: { traceparent: `00-${TRACE_ID}-zz-01`, "x-request-id": "off-2" },
    });
    await gw.close();
    expect(receiver.bodies.length).toBe(before);
    const seen = (id: string) => node.requests.find((r) => r.headers["x-request-id"] === id)?.headers;
    expect(seen("off-1")?.traceparent).toBe(parent);
    expect(seen("off-1")?.tracestate).toBeUndefined();
    expect(seen("off-2")?.traceparent).toBeUndefined();
  });
});
