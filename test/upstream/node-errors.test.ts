import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// bitcoind answers a call's own error with HTTP 500 and the JSON-RPC 1.0 error as the body (httprpc.cpp
// JSONErrorReply): a transaction it does not know is -5 at 500. That is the node's answer (registry
// `errorStatus`), relayed once and not held against the node: four such lookups took every node of the
// label out of rotation, and with them every caller's writes.

const btc = endpointsByLabel.get("btc") as Endpoint;
const UNKNOWN_TX = "ab".repeat(32);
const NO_SUCH_TX =
  '{"result":null,"error":{"code":-5,"message":"No such mempool or blockchain transaction. Use gettransaction for wallet transactions."},"id":1}\n';

describe("a bitcoind's own error at HTTP 500 is its answer (loopback Bitcoin Core)", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  const lookups = () =>
    nodes.flatMap((node) => node.requests.filter((r) => r.body.includes("getrawtransaction")));

  beforeAll(async () => {
    const unknownTx = (request: { body: string }) =>
      request.body.includes(UNKNOWN_TX) ? { status: 500, body: NO_SUCH_TX } : undefined;
    nodes = await Promise.all(
      [800_001, 800_000].map((height) =>
        startLoopbackNode(firstOf(unknownTx, softwareNode(btc, nodeState(btc, height)))),
      ),
    );
    gw = await startGateway({
      upstreams: { btc: nodes.map((node, i) => ({ url: node.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("is relayed as bitcoind sent it, asked of one node, and leaves every node in rotation", async () => {
    for (let i = 0; i < 6; i++) {
      const r = await gw.call("btc", `/${KEYS.all}/`, {
        body: `{"jsonrpc":"1.0","id":1,"method":"getrawtransaction","params":["${UNKNOWN_TX}"]}`,
      });
      expect(r.status).toBe(500);
      expect(r.json).toEqual(JSON.parse(NO_SUCH_TX));
    }
    expect(lookups()).toHaveLength(6);
    const states = gw.gateway.upstreams.group("btc", "/")?.members.map((m) => m.health.state);
    expect(states).toEqual(["healthy", "healthy"]);
  });
});

// The same status from a node that cannot serve (-28 while bitcoind loads its block index) or from what
// stands in front of it (a proxy's HTML error page) is a failure, as any 5xx is: the call goes to another
// node. Only a body that is the node's own JSON-RPC error is its answer.
describe("a 500 that is not bitcoind's own answer is a failure (loopback Bitcoin Core)", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  let fault: "warmup" | "html" = "warmup";

  beforeAll(async () => {
    const faulty = (request: { body: string }) => {
      // the test's own call only: the prober asks getblockhash 0 for the chain
      if (!request.body.includes('"getblockhash","params":[5]')) return undefined;
      return fault === "warmup"
        ? {
            status: 500,
            body: '{"result":null,"error":{"code":-28,"message":"Loading block index…"},"id":1}\n',
          }
        : {
            status: 500,
            headers: { "content-type": "text/html" },
            body: "<html>500 Internal Server Error</html>",
          };
    };
    nodes = await Promise.all([
      startLoopbackNode(firstOf(faulty, softwareNode(btc, nodeState(btc, 800_000)))),
      startLoopbackNode(softwareNode(btc, nodeState(btc, 800_000))),
    ]);
    gw = await startGateway({
      upstreams: { btc: nodes.map((node, i) => ({ url: node.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  for (const kind of ["warmup", "html"] as const) {
    it(`${kind === "warmup" ? "-28 while loading" : "a proxy's HTML page"}: every call is answered by the other node`, async () => {
      fault = kind;
      for (let id = 1; id <= 6; id++) {
        const r = await gw.call("btc", `/${KEYS.all}/`, {
          body: `{"jsonrpc":"1.0","id":${id},"method":"getblockhash","params":[5]}`,
        });
        expect(r.status, r.text).toBe(200);
      }
    });
  }
});

// ton-http-api answers every tonlib error at HTTP 500 as {"ok": false, "error", "code": 500}, over JSON-RPC
// too (pyTON/main.py's TonlibException handler), and Octez answers a protocol's verdict on an operation at
// 500 as a list of {kind, id} (resto's server.ml): both are the node's answer to a caller's call (registry
// `nodeErrors`). Counted as failures, three callers' mistakes took every node out of rotation and with them
// every write of the label. Their own troubles (tonlib's LITE_SERVER_NETWORK, Octez's `failure`) still are
// failures: the call goes to another node.
const ton = endpointsByLabel.get("ton") as Endpoint;
const xtz = endpointsByLabel.get("xtz") as Endpoint;
const INACTIVE = "EQinactive000000000000000000000000000000000000000";
const TONLIB_REFUSAL = `{"ok":false,"error":"LITE_SERVER_UNKNOWN: cannot run get-method of an account that is not active","code":500}`;
const LITESERVER_AWAY = '{"ok":false,"error":"LITE_SERVER_NETWORK: timeout","code":500}';
const BALANCE_TOO_LOW =
  '[{"kind":"temporary","id":"proto.021-PsQuebec.contract.balance_too_low","contract":"tz1caller","balance":"1","amount":"1000000"}]\n';
const SIMULATE = "/chains/main/blocks/head/helpers/scripts/simulate_operation";

describe("a node's own error at HTTP 500 is its answer (loopback ton-http-api and Octez)", () => {
  let tonNodes: LoopbackNode[];
  let xtzNodes: LoopbackNode[];
  let gw: RunningGateway;
  let away = false;
  const asked = (nodes: LoopbackNode[], what: string) =>
    nodes.map((node) => node.requests.filter((r) => r.body.includes(what) || r.url.includes(what)).length);
  const states = (label: string) =>
    gw.gateway.upstreams.group(label, "/")?.members.map((m) => m.health.state);

  beforeAll(async () => {
    const tonlib = (request: { body: string }) => {
      if (!request.body.includes(INACTIVE)) return undefined;
      return { status: 500, body: away ? LITESERVER_AWAY : TONLIB_REFUSAL };
    };
    const octez = (request: { url: string }) =>
      request.url.includes(SIMULATE)
        ? { status: 500, headers: { "content-type": "application/json" }, body: BALANCE_TOO_LOW }
        : undefined;
    tonNodes = await Promise.all(
      [0, 1, 2].map(() => startLoopbackNode(firstOf(tonlib, softwareNode(ton, nodeState(ton, 40_000_000))))),
    );
    xtzNodes = await Promise.all(
      [0, 1, 2].map(() => startLoopbackNode(firstOf(octez, softwareNode(xtz, nodeState(xtz, 7_000_000))))),
    );
    gw = await startGateway({
      upstreams: {
        ton: tonNodes.map((node, i) => ({ url: node.url, name: `t${i}` })),
        xtz: xtzNodes.map((node, i) => ({ url: node.url, name: `x${i}` })),
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...(tonNodes ?? []), ...(xtzNodes ?? [])].map((node) => node.close()));
  });

  it("ton-http-api's tonlib error: relayed as it came, asked of one node each time, every node stays in rotation", async () => {
    for (let id = 1; id <= 4; id++) {
      const r = await gw.call("ton", `/${KEYS.all}/jsonRPC`, {
        body: `{"jsonrpc":"2.0","id":${id},"method":"runGetMethod","params":{"address":"${INACTIVE}","method":"seqno","stack":[]}}`,
      });
      expect(r.status).toBe(500);
      expect(r.json).toEqual(JSON.parse(TONLIB_REFUSAL));
    }
    expect(asked(tonNodes, INACTIVE).reduce((a, b) => a + b)).toBe(4);
    expect(states("ton")).toEqual(["healthy", "healthy", "healthy"]);
  });

  it("Octez's protocol error: relayed as it came, asked of one node each time, every node stays in rotation", async () => {
    for (let i = 0; i < 4; i++) {
      const r = await gw.call("xtz", `/${KEYS.all}${SIMULATE}`, {
        body: '{"operation":{},"chain_id":"NetXdQprcVkpaWU"}',
      });
      expect(r.status).toBe(500);
      expect(r.text).toBe(BALANCE_TOO_LOW);
    }
    expect(asked(xtzNodes, SIMULATE).reduce((a, b) => a + b)).toBe(4);
    expect(states("xtz")).toEqual(["healthy", "healthy", "healthy"]);
  });

  it("over a WebSocket (bridged to HTTP) too: each call gets the node's error, and every node stays in rotation", async () => {
    const restore = resolveTestHosts();
    const client = await Client.open(`ws://ton.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      for (let i = 0; i < 4; i++) {
        const answer = await client.call("runGetMethod", { address: INACTIVE, method: "seqno", stack: [] });
        expect(answer.error?.data).toMatchObject({ status: 500, answer: JSON.parse(TONLIB_REFUSAL) });
      }
      expect(states("ton")).toEqual(["healthy", "healthy", "healthy"]);
    } finally {
      client.close();
      restore();
    }
  });

  it("tonlib's own trouble (LITE_SERVER_NETWORK) at the same 500 is a failure: the call is asked of another node", async () => {
    away = true;
    const before = asked(tonNodes, INACTIVE).reduce((a, b) => a + b);
    const r = await gw.call("ton", `/${KEYS.all}/jsonRPC`, {
      body: `{"jsonrpc":"2.0","id":9,"method":"runGetMethod","params":{"address":"${INACTIVE}","method":"seqno","stack":[]}}`,
    });
    expect(r.status).toBeGreaterThanOrEqual(500);
    expect(asked(tonNodes, INACTIVE).reduce((a, b) => a + b) - before).toBeGreaterThan(1);
  });
});
