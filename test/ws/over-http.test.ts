import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// nearcore, stellar-rpc, toncenter and java-tron's /jsonrpc have no WebSocket server, while their labels
// offer one (registry `webSocketOverHttp`): the gateway sends each message on the caller's socket to the
// node over HTTP. Two loopback nearcore nodes answer over HTTP only, as the real one does; `a` holds a
// transaction without answering until it is closed.

const near = endpointsByLabel.get("near");
if (near === undefined) throw new Error("no near in the registry");
const HEIGHT = 9000;

describe("a WebSocket on a label whose nodes have no WebSocket server (near)", () => {
  let a: LoopbackNode;
  let b: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void;
  const url = () => `ws://near.${DOMAIN}:${gw.port}/${KEYS.all}`;
  const hang = () => new Promise<undefined>(() => {});
  const sentTx = (node: LoopbackNode) => node.requests.filter((r) => r.body.includes('"send_tx"')).length;
  const state = (name: string) =>
    gw.gateway.upstreams.group("near", "/")?.members.find((m) => m.name === name)?.health.state;

  beforeAll(async () => {
    restore = resolveTestHosts();
    a = await startLoopbackNode(
      firstOf(
        (r) => (r.body.includes('"send_tx"') ? hang() : undefined),
        softwareNode(near, nodeState(near, HEIGHT)),
      ),
    );
    b = await startLoopbackNode(softwareNode(near, nodeState(near, HEIGHT)));
    gw = await startGateway({
      upstreams: {
        near: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b", tier: "fallback" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 200 },
    });
    await eventually(() => state("a") === "healthy" && state("b") === "healthy", 5_000, "both nodes probed");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.close(), b?.close()]);
    restore?.();
  });

  it("answers calls over HTTP at the node's own path, never with the key, and refuses what HTTP refuses", async () => {
    const client = await Client.open(url());
    const status = await client.call("status", []);
    expect(
      (status.result as { sync_info: { latest_block_height: number } }).sync_info.latest_block_height,
    ).toBe(HEIGHT);
    const seen = a.requests.filter((r) => /"id":1\d\d\d/.test(r.body));
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: "POST", url: "/" });
    expect(JSON.stringify(seen[0])).not.toContain(KEYS.all);
    // the node's own error, in its own shape
    const unknown = await client.call("no_such_method", []);
    expect(unknown.error?.data?.code).toBe("METHOD_NOT_FOUND");
    expect(client.isOpen).toBe(true);
    // the node is as healthy over HTTP as before, and HTTP callers are served
    expect(state("a")).toBe("healthy");
    const http = await gw.call("near", `/${KEYS.all}/`, { body: rpcBody("status", []) });
    expect(http.status).toBe(200);
    client.close();
  });

  it("moves to another node when its node goes: a read is asked again there, a write is not sent twice", async () => {
    const client = await Client.open(url());
    client.send('{"jsonrpc":"2.0","id":"write","method":"send_tx","params":{"signed_tx_base64":"AAAA"}}');
    await eventually(() => sentTx(a) === 1, 3_000, "the write at a");
    await a.close();
    const write = await client.answerTo('"write"');
    expect(write.error?.data?.code).toBe("WRITE_NOT_CONFIRMED");
    // as every refusal on a connection, with its request id
    expect(write.error?.data?.requestId).toMatch(/^[0-9a-f-]{16,}$/);
    const status = await client.call("status", []);
    expect(status.error).toBeUndefined();
    expect(b.requests.some((r) => r.body.includes('"status"') && /"id":1\d\d\d/.test(r.body))).toBe(true);
    expect(sentTx(a) + sentTx(b)).toBe(1);
    expect(client.isOpen).toBe(true);
    client.close();
  });
});

describe("a bridged label's node that answers with nothing a caller can use", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void;
  /** What the node does with the callers' calls (ids 1000 and up): answer, or fail in one of these ways. */
  let mode: "empty-503" | "html-502" | "large" | "no-id-429" | "slow" | "held" | "ok" = "ok";

  beforeAll(async () => {
    restore = resolveTestHosts();
    const software = softwareNode(near, nodeState(near, HEIGHT));
    node = await startLoopbackNode(async (request) => {
      if (!/"id":"?(1\d\d\d|w|slow|held)/.test(request.body) || mode === "ok") return software(request);
      if (mode === "empty-503") return { status: 503, body: "" };
      if (mode === "html-502")
        return { status: 502, headers: { "content-type": "text/html" }, body: "<html>502</html>" };
      // toncenter's rate limiter: JSON, but no call's answer
      if (mode === "no-id-429")
        return { status: 429, body: { ok: false, error: "Ratelimit exceed", code: 429 } };
      if (mode === "slow")
        return request.body.includes('"slow"') ? new Promise<undefined>(() => {}) : software(request);
      // nearcore holds a tx call until its wait_until, past the headers timeout (registry longPolls)
      if (mode === "held")
        return new Promise((answer) =>
          setTimeout(
            () =>
              answer({ body: { jsonrpc: "2.0", id: "held", result: { final_execution_status: "FINAL" } } }),
            1_200,
          ),
        );
      return { body: { jsonrpc: "2.0", id: 1, result: "x".repeat(4096) } };
    });
    gw = await startGateway({
      upstreams: { near: [node.url] },
      limits: { upstream: { ...DEFAULT_LIMITS.upstream, maxResponseBytes: 2048, headersTimeoutMs: 500 } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("answers each call with the error an HTTP caller gets, a write WRITE_NOT_CONFIRMED, and keeps the connection", async () => {
    const client = await Client.open(`ws://near.${DOMAIN}:${gw.port}/${KEYS.all}`);
    mode = "empty-503";
    expect((await client.call("status", [])).error?.data?.code).toBe("UPSTREAM_BAD_RESPONSE");
    mode = "html-502";
    expect((await client.call("status", [])).error?.data?.code).toBe("UPSTREAM_BAD_RESPONSE");
    client.send('{"jsonrpc":"2.0","id":"w","method":"send_tx","params":{"signed_tx_base64":"AAAA"}}');
    expect((await client.answerTo('"w"')).error?.data?.code).toBe("WRITE_NOT_CONFIRMED");
    mode = "large";
    expect((await client.call("status", [])).error?.data?.code).toBe("UPSTREAM_RESPONSE_TOO_LARGE");
    mode = "no-id-429";
    expect((await client.call("status", [])).error?.data?.code).toBe("UPSTREAM_BAD_RESPONSE");
    // each went to the node once, and the connection serves the next call
    expect(node.requests.filter((r) => r.body.includes('"send_tx"'))).toHaveLength(1);
    mode = "ok";
    expect((await client.call("status", [])).error).toBeUndefined();
    expect(client.isOpen).toBe(true);
    client.close();
  });

  it("a call the node does not answer in time gets UPSTREAM_TIMEOUT alone: the calls beside it go on", async () => {
    const client = await Client.open(`ws://near.${DOMAIN}:${gw.port}/${KEYS.all}`);
    mode = "slow";
    client.send('{"jsonrpc":"2.0","id":"slow","method":"status","params":[]}');
    const beside = await client.call("status", []);
    expect(beside.error).toBeUndefined();
    expect((await client.answerTo('"slow"', 5_000)).error?.data?.code).toBe("UPSTREAM_TIMEOUT");
    expect((await client.call("status", [])).error).toBeUndefined();
    expect(client.isOpen).toBe(true);
    mode = "ok";
    client.close();
  });

  it("a long poll (tx with wait_until) is held past the headers timeout, as over HTTP", async () => {
    const client = await Client.open(`ws://near.${DOMAIN}:${gw.port}/${KEYS.all}`);
    mode = "held";
    client.send(
      '{"jsonrpc":"2.0","id":"held","method":"tx","params":{"tx_hash":"7tkzFg8RHBmMw1ncRJZCCZAizgq4rwCftTKYLce8RU8t","sender_account_id":"alice.near","wait_until":"FINAL"}}',
    );
    const answer = await client.answerTo('"held"', 5_000);
    expect(answer.error).toBeUndefined();
    expect(answer.result).toEqual({ final_execution_status: "FINAL" });
    mode = "ok";
    client.close();
  });
});

describe.each([
  ["xlm", "getLatestLedger", "/"],
  ["ton", "getMasterchainInfo", "/"],
  ["trx", "eth_blockNumber", "/jsonrpc"],
])("%s's WebSocket, whose node has none", (label, method, path) => {
  const endpoint = endpointsByLabel.get(label);
  if (endpoint === undefined) throw new Error(`no ${label} in the registry`);
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackNode(softwareNode(endpoint, nodeState(endpoint, HEIGHT)));
    gw = await startGateway({ upstreams: { [label]: [node.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it(`answers ${method} with the node's answer over HTTP at ${path}`, async () => {
    const client = await Client.open(`ws://${label}.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const answer = await client.call(
      method,
      method === "eth_blockNumber" ? [] : ({} as unknown as unknown[]),
    );
    expect(answer.error).toBeUndefined();
    expect(answer.result).toBeDefined();
    const seen = node.requests.filter((r) => /"id":1\d\d\d/.test(r.body));
    expect(seen.map((r) => [r.method, r.url])).toEqual([["POST", path]]);
    client.close();
  });
});

describe("a node that answers a WebSocket handshake with an HTTP status (dot, a node with no WebSocket port open)", () => {
  const dot = endpointsByLabel.get("dot");
  if (dot === undefined) throw new Error("no dot in the registry");
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void;
  const state = () => gw.gateway.upstreams.group("dot", "/")?.members[0]?.health.state;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackNode(softwareNode(dot, nodeState(dot, HEIGHT)));
    gw = await startGateway({
      upstreams: { dot: [node.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 200 },
    });
    await eventually(() => state() === "healthy", 5_000, "the node probed");
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("refuses the upgrade and keeps serving HTTP callers from that node: it answered, so it is up", async () => {
    for (let i = 0; i < 3; i++) {
      const refused = await Client.refused(`ws://dot.${DOMAIN}:${gw.port}/${KEYS.all}`);
      expect(refused.status).toBe(503);
    }
    expect(state()).toBe("healthy");
    const http = await gw.call("dot", `/${KEYS.all}/`, { body: rpcBody("chain_getHeader", []) });
    expect(http.status).toBe(200);
  });
});

describe("a bridged connection's long polls and the caller's held calls", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void;
  const release: Array<() => void> = [];
  const txSeen = () => node.requests.filter((r) => r.body.includes('"method":"tx"')).length;

  beforeAll(async () => {
    restore = resolveTestHosts();
    const software = softwareNode(near, nodeState(near, HEIGHT));
    // nearcore holds a tx call until its wait_until: here, until the test lets it go
    node = await startLoopbackNode((request) => {
      if (!request.body.includes('"method":"tx"')) return software(request);
      const id = /"id":\s*("[^"]*"|\d+)/.exec(request.body)?.[1] ?? "null";
      return new Promise((answer) =>
        release.push(() =>
          answer({ body: `{"jsonrpc":"2.0","id":${id},"result":{"final_execution_status":"FINAL"}}` }),
        ),
      );
    });
    gw = await startGateway({
      upstreams: { near: [node.url] },
      limits: { ...DEFAULT_LIMITS, maxHeldCallsPerCaller: 1 },
    });
  });
  afterAll(async () => {
    for (const answer of release) answer();
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("take the caller's slots as its HTTP ones do: past them, the calls are refused by id, none reaching the node", async () => {
    const client = await Client.open(`ws://near.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const tx = (id: string) =>
      `{"jsonrpc":"2.0","id":"${id}","method":"tx","params":{"tx_hash":"7tkzFg8RHBmMw1ncRJZCCZAizgq4rwCftTKYLce8RU8t","sender_account_id":"alice.near","wait_until":"FINAL"}}`;
    client.send(tx("a"));
    await eventually(() => txSeen() === 1, 3_000, "the first tx held at the node");
    client.send(tx("b"));
    expect((await client.answerTo('"b"')).error?.data?.code).toBe("TOO_MANY_HELD_CALLS");
    // over HTTP, the same key's slot is taken too
    const http = await gw.call("near", `/${KEYS.all}/`, { body: tx("c") });
    expect(http.json).toMatchObject({ id: "c", error: { data: { code: "TOO_MANY_HELD_CALLS" } } });
    expect(txSeen()).toBe(1);
    // the first answered, the slot is free again
    for (const answer of release.splice(0)) answer();
    expect((await client.answerTo('"a"')).result).toEqual({ final_execution_status: "FINAL" });
    client.send(tx("d"));
    await eventually(() => txSeen() === 2, 3_000, "the next tx held at the node");
    for (const answer of release.splice(0)) answer();
    expect((await client.answerTo('"d"')).error).toBeUndefined();
    client.close();
  });
});
