import fc from "fast-check";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import type { LabelUpstreams } from "../../src/config/types.js";
import type { Endpoint } from "../../src/registry/types.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { typicalCalls, typicalRequest } from "../support/typical-calls.js";
import { Client } from "../support/ws-client.js";

// Random and mutated requests, over HTTP to every label of the registry and over WebSocket to every label
// that serves it, with fast-check. Whatever arrives, the gateway answers with one of its documented
// refusals or the node's own answer: never INTERNAL (a defect), never a crash, and it serves a plain call
// afterwards. Every label's node answers as its software does (support/software-node.ts).

const endpoints = [...endpointsByLabel.values()];
const websocketLabels = endpoints.filter((e) => e.websocket);

/** A JSON-RPC method of the label: allowed, dedicated-only, websocket-only, or refused. */
function methodsOf(endpoint: Endpoint): string[] {
  return endpoint.mounts.flatMap((m) => [...(m.policy.jsonrpc?.methods.keys() ?? [])]);
}

const anyId: fc.Arbitrary<string> = fc.oneof(
  fc.integer().map(String),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map((n) => n.toString()),
  fc.string({ maxLength: 20 }).map((s) => JSON.stringify(s)),
  fc.constant("null"),
  fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
);

/** A JSON-RPC call's text, written member by member so ids keep every digit and members can repeat. */
function callText(methods: readonly string[]): fc.Arbitrary<string> {
  const member = (name: string, value: fc.Arbitrary<string>) => value.map((v) => `"${name}":${v}`);
  return fc
    .tuple(
      fc.option(member("jsonrpc", fc.constantFrom('"2.0"', '"1.0"', '"3"', "2", "null"))),
      fc.option(member("id", anyId.map(String))),
      fc.option(
        member(
          "method",
          fc
            .oneof(fc.constantFrom(...methods, "admin_peers", "eth_sign"), fc.string({ maxLength: 30 }))
            .map((m) => JSON.stringify(m)),
        ),
      ),
      fc.option(
        member(
          "params",
          fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
        ),
      ),
      // a member written twice, or one no envelope has
      fc.option(fc.constantFrom("method", "id", "params", "extra").chain((name) => member(name, anyId))),
    )
    .map((members) => `{${members.filter((m) => m !== null).join(",")}}`);
}

/** A body: a call, a batch of them, any JSON at all, or a valid call with a few bytes mutated. */
function bodyFor(endpoint: Endpoint): fc.Arbitrary<string> {
  const methods = methodsOf(endpoint);
  const call = callText(methods.length > 0 ? methods : ["eth_blockNumber"]);
  const mutated = fc
    .tuple(
      call,
      fc.nat(),
      fc.constantFrom("delete", "insert", "truncate", "duplicate"),
      fc.string({ maxLength: 3 }),
    )
    .map(([text, at, how, bytes]) => {
      const i = at % (text.length + 1);
      if (how === "delete") return text.slice(0, i) + text.slice(i + 1);
      if (how === "insert") return text.slice(0, i) + bytes + text.slice(i);
      if (how === "truncate") return text.slice(0, i);
      return text.slice(0, i) + text.slice(0, i) + text.slice(i);
    });
  return fc.oneof(
    call,
    fc.array(call, { maxLength: 120 }).map((calls) => `[${calls.join(",")}]`),
    fc.jsonValue({ maxDepth: 6 }).map((v) => JSON.stringify(v)),
    mutated,
    fc.constantFrom("", "[]", "{}", "[[]]", "null", `${"[".repeat(200)}${"]".repeat(200)}`),
  );
}

/** A path below the key: the mount's root, a REST route with random segments, or anything. */
const pathArbitrary = fc.oneof(
  fc.constant("/"),
  fc.array(fc.stringMatching(/^[A-Za-z0-9_.~%-]{0,12}$/), { maxLength: 6 }).map((s) => `/${s.join("/")}`),
  fc.constantFrom(
    "/jsonrpc",
    "/wallet/getnowblock",
    "/chains/main/blocks/head/header",
    "/v2/status",
    "/blocks/best",
    "/chain/height",
    "/..%2f..",
    "/%00",
  ),
);

describe("fuzzing the transports with random and mutated frames", () => {
  const nodes: LoopbackNode[] = [];
  let ws: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    ws = await startLoopbackWsNode(evmNode());
    const upstreams: Record<string, LabelUpstreams> = {};
    await Promise.all(
      endpoints.map(async (endpoint, index) => {
        const node = await startLoopbackNode(softwareNode(endpoint, nodeState(endpoint, 1_000 + index)));
        nodes.push(node);
        upstreams[endpoint.label] = [{ url: node.url, ws: ws.wsUrl }];
      }),
    );
    gw = await startGateway({ upstreams, log: { level: "info", access: false } });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...nodes.map((n) => n.close()), ws?.close()]);
    restore?.();
  });

  const unhandled = () => gw.logs.filter((line) => line.includes('"msg":"unhandled"'));

  it("HTTP: every answer is a documented one, and none is INTERNAL", async () => {
    const label = fc.constantFrom(...endpoints);
    await fc.assert(
      fc.asyncProperty(
        label.chain((endpoint) =>
          fc.record({
            endpoint: fc.constant(endpoint),
            path: pathArbitrary,
            method: fc.constantFrom("POST", "POST", "POST", "GET", "PUT", "DELETE"),
            body: bodyFor(endpoint),
            type: fc.constantFrom("application/json", "text/plain", "application/x-www-form-urlencoded", ""),
          }),
        ),
        async ({ endpoint, path, method, body, type }) => {
          const r = await request(`${gw.origin}/${KEYS.all}${path}`, {
            method,
            headers: {
              host: `${endpoint.label}.${DOMAIN}`,
              ...(type === "" ? {} : { "content-type": type }),
            },
            ...(method === "GET" ? {} : { body }),
          });
          const text = await r.body.text();
          expect(r.statusCode).toBeGreaterThanOrEqual(200);
          expect(r.statusCode).toBeLessThan(600);
          expect(text).not.toContain('"INTERNAL"');
        },
      ),
      { numRuns: 1500 },
    );
    expect(unhandled()).toEqual([]);
  });

  it("WebSocket: every frame is answered or refused, no connection is closed with 1011", async () => {
    const frame = fc
      .constantFrom(...websocketLabels)
      .chain((endpoint) =>
        fc.record({ endpoint: fc.constant(endpoint), body: bodyFor(endpoint), binary: fc.boolean() }),
      );
    const clients = new Map<string, Client>();
    const clientFor = async (label: string): Promise<Client> => {
      const open = clients.get(label);
      if (open?.isOpen) return open;
      const client = await Client.open(`ws://${label}.${DOMAIN}:${gw.port}/${KEYS.all}`);
      clients.set(label, client);
      return client;
    };
    const closes: number[] = [];
    let sentinel = 0;
    await fc.assert(
      fc.asyncProperty(frame, async ({ endpoint, body, binary }) => {
        const client = await clientFor(endpoint.label);
        client.send(body, binary);
        // Then a plain call: its answer shows the frame before it was taken and the connection still
        // serves; a connection closed instead says why (1007 invalid text, 1009 too big are ws's own).
        const id = `"sentinel-${sentinel++}"`;
        client.send(`{"jsonrpc":"2.0","id":${id},"method":"eth_chainId","params":[]}`);
        try {
          await client.answerTo(id);
        } catch {
          const closed = await Promise.race([
            client.closed,
            new Promise<undefined>((r) => setTimeout(() => r(undefined), 100)),
          ]);
          expect(closed, `no answer and no close after ${body.slice(0, 200)}`).toBeDefined();
          closes.push(closed?.code ?? 0);
        }
      }),
      { numRuns: 600 },
    );
    for (const client of clients.values()) client.close();
    expect(closes.filter((code) => code === 1011)).toEqual([]);
    expect(unhandled()).toEqual([]);
  });

  it("still serves every label's head call afterwards", async () => {
    for (const endpoint of endpoints) {
      const [call] = typicalCalls(endpoint);
      if (call === undefined) throw new Error(`no typical call for ${endpoint.label}`);
      const sent = typicalRequest(call, 1);
      const r = await request(`${gw.origin}/${KEYS.all}${sent.path}`, {
        method: sent.method,
        headers: { host: `${endpoint.label}.${DOMAIN}`, "content-type": "application/json" },
        ...(sent.body === undefined ? {} : { body: sent.body }),
      });
      await r.body.text();
      expect(r.statusCode, endpoint.label).toBe(200);
    }
  });
});
