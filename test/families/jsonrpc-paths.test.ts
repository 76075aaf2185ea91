import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, type StartOptions, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { HEIGHT, startNodeFor } from "../support/sdk-nodes.js";
import { nodeState, softwareNode } from "../support/software-node.js";

/** A loopback toncenter node behind a gateway's `ton` label. */
async function tonGateway(options: StartOptions = {}): Promise<{ node: LoopbackNode; gw: RunningGateway }> {
  const endpoint = endpointsByLabel.get("ton") as Endpoint;
  const started = await startNodeFor(endpoint, endpoint.mounts[0] as Endpoint["mounts"][number]);
  const gw = await startGateway({ ...options, upstreams: { ton: [started.upstream] } });
  return { node: started.node, gw };
}

// toncenter's SDKs are set up with the server's own JSON-RPC path (tonweb's and @ton/ton's endpoint is
// https://toncenter.com/api/v2/jsonRPC; the Python server's is /jsonRPC): below the key, those paths take
// the same calls as the key's URL itself (registry `jsonRpcPaths`), and the node gets each at its own URL.
describe("a JSON-RPC interface's own paths (toncenter's /api/v2/jsonRPC)", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    ({ node, gw } = await tonGateway());
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const masterchainInfo = (path: string) =>
    gw.call("ton", `/${KEYS.all}${path}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getMasterchainInfo", params: {} }),
    });

  it("answers at the key's URL and at the server's own paths alike, from the node's one URL", async () => {
    for (const path of ["/", "/jsonRPC", "/api/v2/jsonRPC"]) {
      node.requests.length = 0;
      const answer = await masterchainInfo(path);
      expect(answer.status, path).toBe(200);
      expect((answer.json as { result: { last: { seqno: number } } }).result.last.seqno).toBe(HEIGHT);
      // the node's own path (ton-http-api's /jsonRPC, as its upstream URL says), never the caller's again
      expect(node.requests.map((request) => request.url)).toEqual(["/jsonRPC"]);
    }
  });

  it("refuses any other path below the key", async () => {
    for (const path of ["/api/v3/jsonRPC", "/jsonRPC/x", "/api"]) {
      const answer = await masterchainInfo(path);
      expect(answer.status, path).toBe(404);
    }
  });
});

// toncenter also takes each method as its own route (`GET /api/v2/getMasterchainInfo`, the params in the
// query, or POST with them as a JSON object), as its documentation shows them: below the key, the gateway
// makes the JSON-RPC call of each (registry `restPaths`), checked as any JSON-RPC call is.
describe("toncenter's REST shapes of its methods", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    // what reaches the node is what this counts: no answer cache in between
    ({ node, gw } = await tonGateway({ cache: { ...DEFAULT_CACHE, enabled: false } }));
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const seen = () =>
    node.requests.map((r) => ({ url: r.url, call: JSON.parse(r.body || "{}") as Record<string, unknown> }));

  it("GET with the query as params, at /api/v2/<method> and /<method>; the node gets the JSON-RPC call", async () => {
    for (const path of ["/api/v2/getMasterchainInfo", "/getMasterchainInfo"]) {
      node.requests.length = 0;
      const answer = await gw.call("ton", `/${KEYS.all}${path}`, { method: "GET" });
      expect(answer.status, path).toBe(200);
      expect((answer.json as { ok: boolean; result: { last: { seqno: number } } }).result.last.seqno).toBe(
        HEIGHT,
      );
      expect(seen()).toMatchObject([{ url: "/jsonRPC", call: { method: "getMasterchainInfo", params: {} } }]);
    }
    node.requests.length = 0;
    const address = "EQCD39VS5jcptHL8vMjEXrzGaRcCVYto7HUn4bpAOg8xqB2N";
    await gw.call("ton", `/${KEYS.all}/api/v2/getTransactions?address=${address}&limit=5`, { method: "GET" });
    expect(seen()).toMatchObject([
      { url: "/jsonRPC", call: { method: "getTransactions", params: { address, limit: "5" } } },
    ]);
  });

  it("POST with a JSON object of params; a write is one, sent once", async () => {
    node.requests.length = 0;
    const boc = "te6ccgEBAQEAAgAAAA==";
    await gw.call("ton", `/${KEYS.all}/api/v2/sendBoc`, { body: JSON.stringify({ boc }) });
    expect(seen()).toMatchObject([{ url: "/jsonRPC", call: { method: "sendBoc", params: { boc } } }]);
  });

  it("refuses what is not a method of the dialect, a body that is not an object, and other HTTP methods", async () => {
    expect((await gw.call("ton", `/${KEYS.all}/api/v2/getWorkerState`, { method: "GET" })).status).toBe(404);
    expect((await gw.call("ton", `/${KEYS.all}/api/v3/getMasterchainInfo`, { method: "GET" })).status).toBe(
      404,
    );
    const array = await gw.call("ton", `/${KEYS.all}/api/v2/runGetMethod`, { body: "[1]" });
    expect(array.status).toBe(400);
    const put = await gw.call("ton", `/${KEYS.all}/api/v2/getMasterchainInfo`, { method: "PUT" });
    expect(put.status).toBe(405);
    expect(put.headers.allow).toBe("GET, POST");
  });

  // A user's GET /api/v2/sendBoc?boc=… (a link a browser, proxy or crawler may send again on its own) was
  // broadcast: the gateway made the sendBoc call of it. toncenter takes its writes, runGetMethod and
  // estimateFee by POST only (pyTON/main.py `@app.post`) and answers a GET of them 405; so does the gateway.
  it("refuses a write, or a method the node takes by POST only, by GET: 405, Allow: POST, nothing sent", async () => {
    const boc = encodeURIComponent("te6ccgEBAQEAAgAAAA==");
    for (const method of ["sendBoc", "sendBocReturnHash", "sendQuery", "runGetMethod", "estimateFee"]) {
      node.requests.length = 0;
      const answer = await gw.call("ton", `/${KEYS.all}/api/v2/${method}?boc=${boc}`, { method: "GET" });
      expect(answer.status, `${method}: ${answer.text}`).toBe(405);
      expect(answer.headers.allow, method).toBe("POST");
      expect(answer.json, method).toMatchObject({ error: { data: { code: "HTTP_METHOD_NOT_ALLOWED" } } });
      expect(seen(), method).toEqual([]);
    }
  });
});

// A GET's query has only text, and ton-http-api coerces a number's text to the number (its json_rpc
// wrapper): `seqno=…` names the block as `"seqno": …` does, so the read goes to a node that has it and its
// answer is kept as the JSON-RPC call's is. Read as no block, it went to the node behind, which failed it.
describe("toncenter's REST shapes name blocks by their numbers' text", () => {
  const ton = endpointsByLabel.get("ton") as Endpoint;
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  const TOP = 40_000_001;

  beforeAll(async () => {
    // tonlib's blocks.header for a block the node has; one past its head its liteserver has not applied
    const header = (height: number) => (request: { body: string }) => {
      const call = JSON.parse(request.body || "{}") as {
        id?: unknown;
        method?: string;
        params?: { seqno?: string };
      };
      if (call.method !== "getBlockHeader") return undefined;
      const seqno = Number(call.params?.seqno);
      const body =
        seqno > height
          ? { ok: false, error: "LITE_SERVER_NOTREADY: block is not applied", code: 500 }
          : {
              ok: true,
              result: { "@type": "blocks.header", id: { workchain: -1, seqno } },
              jsonrpc: "2.0",
              id: String(call.id),
            };
      return { status: seqno > height ? 500 : 200, body: JSON.stringify(body) };
    };
    nodes = await Promise.all(
      [TOP, TOP - 1].map((h) => startLoopbackNode(firstOf(header(h), softwareNode(ton, nodeState(ton, h))))),
    );
    gw = await startGateway({
      upstreams: { ton: nodes.map((node, i) => ({ url: node.url, name: `t${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("GET getBlockHeader?workchain=-1&…&seqno=<the top block> reaches only the node that has it, then the cache", async () => {
    const asked = () =>
      nodes.map((node) => node.requests.filter((r) => r.body.includes("getBlockHeader")).length);
    const path = `/${KEYS.all}/api/v2/getBlockHeader?workchain=-1&shard=-9223372036854775808&seqno=${TOP}`;
    const first = await gw.call("ton", path, { method: "GET" });
    expect(first.status, first.text).toBe(200);
    const second = await gw.call("ton", path, { method: "GET" });
    expect(second.status).toBe(200);
    expect(second.headers["x-cache"]).toBe("hit");
    expect(asked()).toEqual([1, 0]);
  });
});
