import { randomBytes } from "node:crypto";
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode, waitUntil } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// Every refusal of a WebSocket upgrade is an HTTP response with a JSON-RPC error body, sent before the
// handshake and before any upstream socket is opened. Upgrades are sent raw (node:http with the Upgrade
// headers) so the status and body can be read as they are.

interface UpgradeResult {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  readonly json: { error?: { code?: number; message?: string; data?: Record<string, unknown> } } | undefined;
}

function upgrade(port: number, host: string, path: string, extra: Record<string, string> = {}) {
  return new Promise<UpgradeResult>((resolve, reject) => {
    const req = request({
      host: "127.0.0.1",
      port,
      path,
      headers: {
        host,
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": randomBytes(16).toString("base64"),
        ...extra,
      },
    });
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json: UpgradeResult["json"];
        try {
          json = JSON.parse(text) as UpgradeResult["json"];
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
      res.on("error", reject);
    });
    req.on("upgrade", (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, headers: res.headers, text: "", json: undefined });
    });
    req.on("error", reject);
    req.end();
  });
}

describe("WebSocket upgrade refusals", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(evmNode());
    // every label has an upstream, so only the gateway's checks can stop an upstream socket being opened
    gw = await startGateway({
      upstreams: {
        eth: [node.url],
        "eth-sepolia": [node.url],
        xtz: [node.url],
        dot: [node.url],
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  const cases: {
    name: string;
    label: string;
    path: string;
    status: number;
    code: string;
    rpc: number;
    data?: Record<string, unknown>;
    extra?: Record<string, string>;
  }[] = [
    {
      name: "a label without WebSocket (eth-sepolia)",
      label: "eth-sepolia",
      path: `/${KEYS.all}`,
      status: 400,
      code: "WEBSOCKET_NOT_OFFERED",
      rpc: -32600,
      data: { label: "eth-sepolia" },
    },
    {
      name: "a label without WebSocket (xtz)",
      label: "xtz",
      path: `/${KEYS.all}`,
      status: 400,
      code: "WEBSOCKET_NOT_OFFERED",
      rpc: -32600,
      data: { label: "xtz" },
    },
    {
      name: "an upgrade to something else than websocket",
      label: "dot",
      path: `/${KEYS.all}`,
      status: 400,
      code: "WEBSOCKET_NOT_OFFERED",
      rpc: -32600,
      extra: { upgrade: "h2c" },
    },
    {
      name: "a malformed Sec-WebSocket-Key",
      label: "dot",
      path: `/${KEYS.all}`,
      status: 400,
      code: "WEBSOCKET_HANDSHAKE_INVALID",
      rpc: -32600,
      data: { reason: "missing or invalid Sec-WebSocket-Key header" },
      extra: { "sec-websocket-key": "not-a-key" },
    },
    {
      name: "a WebSocket version the gateway does not speak",
      label: "dot",
      path: `/${KEYS.all}`,
      status: 400,
      code: "WEBSOCKET_HANDSHAKE_INVALID",
      rpc: -32600,
      data: { reason: "missing or invalid Sec-WebSocket-Version header (13, or the hybi draft's 8)" },
      extra: { "sec-websocket-version": "7" },
    },
    { name: "no key", label: "dot", path: "/", status: 401, code: "UNAUTHORIZED", rpc: -32040 },
    {
      name: "an unknown key",
      label: "dot",
      path: "/FNunknownKey0000000000000000000",
      status: 401,
      code: "UNAUTHORIZED",
      rpc: -32040,
    },
    {
      name: "a key for another network (ethOnly on dot)",
      label: "dot",
      path: `/${KEYS.ethOnly}`,
      status: 403,
      code: "NETWORK_FORBIDDEN",
      rpc: -32041,
      data: { network: "dot" },
    },
    {
      name: "a path after the key",
      label: "dot",
      path: `/${KEYS.all}/extra`,
      status: 404,
      code: "NOT_FOUND",
      rpc: -32601,
    },
    {
      name: "an unknown label",
      label: "nosuchnetwork",
      path: `/${KEYS.all}`,
      status: 404,
      code: "UNKNOWN_NETWORK",
      rpc: -32601,
    },
  ];

  for (const c of cases) {
    it(`${c.name} → HTTP ${c.status} ${c.code} before the handshake, no upstream socket`, async () => {
      const before = node.connections.length;
      const refusals = () =>
        gw.metric("gateway_requests_total", {
          // refused before its label was read: no network, or no WebSocket asked for
          label: c.code === "UNKNOWN_NETWORK" || c.extra !== undefined ? "none" : c.label,
          family: "websocket",
          code: c.code,
        });
      const counted = await refusals();
      const result = await upgrade(gw.port, `${c.label}.${DOMAIN}`, c.path, c.extra);
      expect(result.status).toBe(c.status);
      // counted as an HTTP request's refusal is
      expect(await refusals()).toBe(counted + 1);
      expect(result.headers["content-type"]).toBe("application/json");
      expect(result.json).toBeDefined();
      expect(result.json).toMatchObject({
        jsonrpc: "2.0",
        id: null,
        error: { code: c.rpc, data: { code: c.code, ...c.data } },
      });
      expect(typeof result.json?.error?.message).toBe("string");
      // the key is never echoed
      expect(result.text).not.toContain(KEYS.all);
      expect(result.text).not.toContain(KEYS.ethOnly);
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(node.connections.length).toBe(before);
    });
  }

  it("a handshake ws refuses itself (a malformed Sec-WebSocket-Protocol) gives its slot and node socket back", async () => {
    const small = await startGateway({
      upstreams: { dot: [node.url] },
      limits: { ws: { ...gw.config.limits.ws, maxConnectionsPerKey: 2 } },
    });
    try {
      for (let i = 0; i < 3; i++) {
        const refused = await upgrade(small.port, `dot.${DOMAIN}`, `/${KEYS.all}`, {
          "sec-websocket-protocol": "a,,b",
        });
        expect(refused.status).toBe(400);
        expect(refused.json?.error?.data).toMatchObject({ code: "WEBSOCKET_HANDSHAKE_INVALID" });
        expect(refused.headers["x-request-id"]).toBeTypeOf("string");
      }
      // each opened its node socket before ws read the header: each is closed again
      await waitUntil(
        () => node.openConnections() === 0,
        3_000,
        "the refused upgrades' node sockets to close",
      );
      // and the key's two slots are free: two upgrades complete
      for (let i = 0; i < 2; i++)
        expect((await upgrade(small.port, `dot.${DOMAIN}`, `/${KEYS.all}`)).status).toBe(101);
    } finally {
      await small.close();
    }
  });

  it("`/KEY/` is accepted like `/KEY`: both complete the handshake and relay calls", async () => {
    for (const path of [`/${KEYS.all}`, `/${KEYS.all}/`]) {
      const before = node.connections.length;
      const raw = await upgrade(gw.port, `dot.${DOMAIN}`, path);
      expect(raw.status).toBe(101);
      expect(node.connections.length).toBe(before + 1);
      // the raw socket was destroyed at once: its upstream socket is closed too
      const upstream = node.latest();
      await waitUntil(() => !upstream.isOpen, 3_000, "the upstream socket to close");

      const ws = new WebSocket(`ws://eth.${DOMAIN}:${gw.port}${path}`);
      await new Promise<void>((resolve, reject) => {
        ws.once("open", () => resolve());
        ws.once("error", reject);
      });
      const answer = new Promise<string>((resolve) => ws.once("message", (data) => resolve(String(data))));
      ws.send('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}');
      expect(JSON.parse(await answer)).toEqual({ jsonrpc: "2.0", id: 1, result: "0x1" });
      const relayed = node.latest();
      expect(relayed.url).toBe("/");
      expect(relayed.methods()).toEqual(["eth_chainId"]);
      ws.close();
      await waitUntil(() => !relayed.isOpen, 3_000, "the upstream socket to close");
    }
  });
});

describe("an upgrade no node takes", () => {
  let gw: RunningGateway;
  let restore: () => void;
  beforeAll(async () => {
    restore = resolveTestHosts();
    // nothing listens on port 9 of the loopback: every socket is refused
    gw = await startGateway({ upstreams: { eth: [{ url: "http://127.0.0.1:9", ws: "ws://127.0.0.1:9" }] } });
  });
  afterAll(async () => {
    await gw?.close();
    restore?.();
  });

  it("is counted as a failed request and written as a warning, as an HTTP request that failed is", async () => {
    const failures = () =>
      gw.metric("gateway_requests_total", { label: "eth", family: "websocket", code: "NO_UPSTREAM" });
    const counted = await failures();
    const result = await upgrade(gw.port, `eth.${DOMAIN}`, `/${KEYS.all}`);
    expect(result.status).toBe(503);
    expect(await failures()).toBe(counted + 1);
    const line = gw.logs.find((l) => l.includes('"msg":"websocket refused"'));
    expect(line).toBeDefined();
    expect(JSON.parse(line as string)).toMatchObject({
      level: "warn",
      label: "eth",
      error: "NO_UPSTREAM",
      status: 503,
    });
    expect(line).not.toContain(KEYS.all);
  });
});

// A customer whose app cannot connect looks at its key's usage: a refused upgrade of a key is one of its
// errors, under its code, as a refused HTTP call is (docs/plans.md, the overview's errors by code).
describe("a keyed upgrade refused counts in its key's usage", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  const recorded: unknown[][] = [];

  beforeAll(async () => {
    node = await startLoopbackWsNode(evmNode());
    gw = await startGateway({
      upstreams: { eth: [node.url], dot: [node.url] },
      usage: { record: (...args: unknown[]) => void recorded.push(args) },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("as one call and one error of its code, costing nothing; an unknown key's counts nowhere", async () => {
    expect((await upgrade(gw.port, `dot.${DOMAIN}`, `/${KEYS.ethOnly}`)).status).toBe(403);
    expect(recorded).toEqual([
      [expect.any(String), "dot", 1, 1, 0, { method: "websocket", code: "NETWORK_FORBIDDEN", ms: undefined }],
    ]);
    expect(JSON.stringify(recorded)).not.toContain(KEYS.ethOnly);
    expect((await upgrade(gw.port, `eth.${DOMAIN}`, "/FNnotAKey00000000000000000000000")).status).toBe(401);
    expect(recorded).toHaveLength(1);
  });
});
