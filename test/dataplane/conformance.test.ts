import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import {
  type CallInit,
  type CallResult,
  DOMAIN,
  KEYS,
  type RunningGateway,
  startGateway,
} from "../support/gateway.js";
import { type LoopbackNode, type SeenRequest, startLoopbackNode } from "../support/loopback-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import {
  answerFor,
  expectedAnswer,
  readHeight,
  type TypicalCall,
  type TypicalRequest,
  typicalCalls,
  typicalRequest,
  upstreamPath,
} from "../support/typical-calls.js";

// Conformance over every label of the generated table: each label's head call (and the head call of every
// other interface it serves) goes through the gateway to that label's own loopback node, which answers as
// the real interface does. Nothing here names a network: a network added to the registry is
// covered by `npm run codegen` alone, or fails with a pointer to HEAD_ANSWERS if its head call is new.

const endpoints = [...endpointsByLabel.values()];
const BASE_PATH = "/base/path";
const WRONG_KEY = "FNwrongkey00000000000000";
const KEY_LIKE = /FN[A-Za-z0-9_-]{16,}/;
const publicHost = (label: string): string => `${label}-public.example`;
/** A distinct chain height per label, so an answer shows which node it came from. */
const heightOf = (index: number): number => 1_000_003 + index * 7_919;
/** A distinct JSON-RPC id per call. */
const idOf = (index: number, call: number): number => 100 + index * 10 + call;

// Credentials and forwarding headers a client may send: none is the upstream's business.
const CLIENT_HEADERS: Record<string, string> = {
  authorization: "Bearer client-authorization-secret",
  cookie: "session=client-cookie-secret",
  "x-api-key": "client-x-api-key-secret",
  "tron-pro-api-key": "client-tron-pro-api-key-secret",
  "x-algo-api-token": "client-x-algo-api-token-secret",
  "x-forwarded-host": "client-forwarded-host.example",
};

describe("conformance: every registry label answers its typical call end to end", () => {
  const nodes = new Map<string, LoopbackNode>();
  /** Every label to its own node; public labels also on `<label>-public.example`. */
  let gw: RunningGateway;
  /** The same nodes, with upstream base URLs that carry a path. */
  let based: RunningGateway;

  beforeAll(async () => {
    const started = await Promise.all(
      endpoints.map(async (endpoint, index) => {
        const responder = softwareNode(endpoint, nodeState(endpoint, heightOf(index)), ["", BASE_PATH]);
        return [endpoint.label, await startLoopbackNode(responder)] as const;
      }),
    );
    for (const [label, node] of started) nodes.set(label, node);
    const publicHosts = Object.fromEntries(
      endpoints.filter((e) => e.public).map((e) => [publicHost(e.label), e.label]),
    );
    [gw, based] = await Promise.all([
      startGateway({
        upstreams: Object.fromEntries(started.map(([label, node]) => [label, [node.url]])),
        publicHosts,
      }),
      startGateway({
        upstreams: Object.fromEntries(started.map(([label, node]) => [label, [`${node.url}${BASE_PATH}`]])),
      }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), based?.close()]);
    await Promise.all([...nodes.values()].map((node) => node.close()));
  });

  function nodeOf(label: string): LoopbackNode {
    const node = nodes.get(label);
    if (node === undefined) throw new Error(`no loopback node for ${label}`);
    return node;
  }

  /** Runs one call and returns the gateway's answer, what the label's node saw, and what any other node saw. */
  async function observe(label: string, send: () => Promise<CallResult>) {
    const before = new Map([...nodes].map(([l, node]) => [l, node.requests.length]));
    const result = await send();
    const seen = nodeOf(label).requests.slice(before.get(label));
    const elsewhere = [...nodes]
      .filter(([l]) => l !== label)
      .flatMap(([l, node]) => node.requests.slice(before.get(l)).map((r) => `${l}: ${r.method} ${r.url}`));
    return { result, seen, elsewhere };
  }

  function init(request: TypicalRequest, extra: Partial<CallInit> = {}): CallInit {
    return {
      method: request.method,
      ...(request.body === undefined ? {} : { body: request.body }),
      ...extra,
    };
  }

  /** The request the node got is the caller's, minus the key and the gateway's own Host. */
  function expectRelayed(seen: SeenRequest, node: LoopbackNode, call: TypicalCall, request: TypicalRequest) {
    const everything = `${seen.method} ${seen.url}\n${seen.rawHeaders.join("\n")}\n\n${seen.body}`;
    expect(everything).not.toContain(KEYS.all);
    expect(everything).not.toMatch(KEY_LIKE);
    expect(everything).not.toContain(DOMAIN);
    expect(everything).not.toContain("-public.example");
    expect(seen.headers.host).toBe(`127.0.0.1:${node.port}`);
    expect(seen.method).toBe(request.method);
    if (request.sent === undefined) expect(seen.body).toBe("");
    else expect(JSON.parse(seen.body)).toEqual(request.sent);
    if (call.head.kind === "jsonrpc") {
      const body = JSON.parse(seen.body) as { method?: unknown; id?: unknown };
      expect([body.method, body.id]).toEqual([call.head.method, (request.sent as { id: unknown }).id]);
    }
  }

  for (const [index, endpoint] of endpoints.entries()) {
    const { label } = endpoint;
    const height = heightOf(index);
    const calls = typicalCalls(endpoint);

    describe(`${label} (${endpoint.networkName}, ${endpoint.environment})`, () => {
      for (const [n, call] of calls.entries()) {
        const id = idOf(index, n);

        it(`${call.name} answers with the label's height, as ${call.head.encoding}`, async () => {
          const answer = answerFor(call, label);
          const node = nodeOf(label);
          const request = typicalRequest(call, id);
          const { result, seen, elsewhere } = await observe(label, () =>
            gw.call(label, `/${KEYS.all}${request.path}`, init(request)),
          );
          expect(result.status, result.text).toBe(200);
          expect(result.json).toEqual(expectedAnswer(call, answer, nodeState(endpoint, height), id));
          expect(readHeight(result.json, call.head)).toBe(height);
          expect(elsewhere).toEqual([]);
          expect(seen).toHaveLength(1);
          const [only] = seen as [SeenRequest];
          expect(only.url).toBe(call.path);
          expectRelayed(only, node, call, request);
        });

        it(`${call.name} keeps an upstream base path: ${upstreamPath(BASE_PATH, call.path)}`, async () => {
          const answer = answerFor(call, label);
          const node = nodeOf(label);
          const request = typicalRequest(call, id);
          const { result, seen } = await observe(label, () =>
            based.call(label, `/${KEYS.all}${request.path}`, init(request)),
          );
          expect(result.status, result.text).toBe(200);
          expect(readHeight(result.json, call.head)).toBe(height);
          expect(result.json).toEqual(expectedAnswer(call, answer, nodeState(endpoint, height), id));
          expect(seen.map((r) => r.url)).toEqual([upstreamPath(BASE_PATH, call.path)]);
          expectRelayed(seen[0] as SeenRequest, node, call, request);
        });
      }

      it("passes no client credential or forwarding header upstream", async () => {
        const node = nodeOf(label);
        for (const [n, call] of calls.entries()) {
          answerFor(call, label);
          const request = typicalRequest(call, idOf(index, n));
          const { result, seen } = await observe(label, () =>
            gw.call(label, `/${KEYS.all}${request.path}`, init(request, { headers: CLIENT_HEADERS })),
          );
          expect(result.status, `${call.name}: ${result.text}`).toBe(200);
          expect(seen, call.name).toHaveLength(1);
          const [only] = seen as [SeenRequest];
          const names = Object.keys(only.headers);
          for (const name of Object.keys(CLIENT_HEADERS)) expect(names, call.name).not.toContain(name);
          const everything = `${only.url}\n${only.rawHeaders.join("\n")}\n\n${only.body}`;
          for (const value of Object.values(CLIENT_HEADERS))
            expect(everything, call.name).not.toContain(value);
          expectRelayed(only, node, call, request);
        }
      });

      if (endpoint.public) {
        it(`answers without a key on its public host ${publicHost(label)}`, async () => {
          const node = nodeOf(label);
          for (const [n, call] of calls.entries()) {
            const answer = answerFor(call, label);
            const request = typicalRequest(call, idOf(index, n));
            const { result, seen } = await observe(label, () =>
              gw.call(label, request.path, init(request, { host: publicHost(label) })),
            );
            expect(result.status, `${call.name}: ${result.text}`).toBe(200);
            expect(result.json).toEqual(
              expectedAnswer(call, answer, nodeState(endpoint, height), idOf(index, n)),
            );
            expect(readHeight(result.json, call.head)).toBe(height);
            expect(seen.map((r) => r.url)).toEqual([call.path]);
            expectRelayed(seen[0] as SeenRequest, node, call, request);
          }
        });

        it("refuses a wrong key on its public host with 401, never falling back to public access", async () => {
          for (const [n, call] of calls.entries()) {
            const request = typicalRequest(call, idOf(index, n));
            const { result, seen, elsewhere } = await observe(label, () =>
              gw.call(label, `/${WRONG_KEY}${request.path}`, init(request, { host: publicHost(label) })),
            );
            expect(result.status, `${call.name}: ${result.text}`).toBe(401);
            expect(result.text).not.toContain(WRONG_KEY);
            expect([...seen, ...elsewhere]).toEqual([]);
          }
        });
      }
    });
  }

  it("fails a label whose head call has no typical answer, naming the table to extend", () => {
    const unknown: TypicalCall = {
      head: {
        kind: "jsonrpc",
        method: "someChain_headHeight",
        params: [],
        field: ["result"],
        encoding: "integer",
      },
      interfaces: "some-chain",
      mountPath: "/",
      path: "/",
      answerKey: "someChain_headHeight",
      name: "someChain_headHeight at /",
    };
    expect(() => answerFor(unknown, "some")).toThrow(
      /label some: its head call "someChain_headHeight" .* has no typical answer\. Add .* HEAD_ANSWERS in test\/support\/typical-calls\.ts/,
    );
  });
});
