import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A node's (or its provider front's) refusal may quote the path it was asked on ("Cannot POST /v3/<provider
// key>"): that key is the operator's, never a caller's to see (node-error-echo.test.ts). A relayed refusal
// is masked; so is one the gateway reads whole before it goes out (a read by hash on a label of several
// nodes, a partial batch, a cacheable call or batch with the answer cache on) and one a WebSocket's bridge
// to an HTTP-only node reads.
const KEY_A = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6";
const KEY_B = "0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d";
const HASH = `0x${"ab".repeat(32)}`;
const refusal = (r: { url: string }) => ({
  status: 404,
  headers: { "content-type": "text/html" },
  body: `<pre>Cannot POST ${r.url}</pre>`,
});

describe("a refusal quoting its upstream's secret path, read whole before it goes out", () => {
  let a: LoopbackNode;
  let b: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    a = await startLoopbackNode(refusal);
    b = await startLoopbackNode(refusal);
    gw = await startGateway({ upstreams: { eth: [`${a.url}/v3/${KEY_A}`, `${b.url}/v3/${KEY_B}`] } });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.close(), b?.close()]);
  });

  it("a relayed call's refusal is masked", async () => {
    const answer = await gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_blockNumber") });
    expect(answer.status).toBe(404);
    expect(answer.text).toContain("/v3/…");
    expect(answer.text).not.toMatch(new RegExp(`${KEY_A}|${KEY_B}`));
  });

  it("a read by hash's refusal is masked, its length the masked page's", async () => {
    const answer = await gw.call("eth", `/${KEYS.all}`, {
      body: rpcBody("eth_getBlockByHash", [HASH, false]),
    });
    expect(answer.status).toBe(404);
    expect(answer.text).toBe("<pre>Cannot POST /v3/…</pre>");
    expect(answer.headers["content-length"]).toBe(String(Buffer.byteLength(answer.text)));
  });

  it("a partial batch's refusal is masked", async () => {
    const answer = await gw.call("eth", `/${KEYS.all}`, {
      body: `[${rpcBody("eth_blockNumber", [], 1)},${rpcBody("no_suchMethod", [], 2)}]`,
    });
    expect(answer.text).toContain("/v3/…");
    expect(answer.text).not.toMatch(new RegExp(`${KEY_A}|${KEY_B}`));
  });
});

describe("with the answer cache on: a refusal quoting the secret path", () => {
  let a: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    a = await startLoopbackNode(refusal);
    gw = await startGateway({
      upstreams: { eth: [`${a.url}/v3/${KEY_A}`] },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await a?.close();
  });

  it("a batch of cacheable reads: its refusal is masked", async () => {
    const answer = await gw.call("eth", `/${KEYS.all}`, {
      body: `[${rpcBody("eth_chainId", [], 1)},${rpcBody("eth_getBlockByNumber", ["0x1", false], 2)}]`,
    });
    expect(answer.text).toContain("/v3/…");
    expect(answer.text).not.toContain(KEY_A);
  });

  it("a single cacheable read: its refusal is masked", async () => {
    const answer = await gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_chainId") });
    expect(answer.text).toContain("/v3/…");
    expect(answer.text).not.toContain(KEY_A);
  });
});

const near = endpointsByLabel.get("near");
if (near === undefined) throw new Error("no near in the registry");

describe("a WebSocket bridged to an HTTP-only node: its refusal quoting the secret path", () => {
  let a: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void;
  beforeAll(async () => {
    restore = resolveTestHosts();
    // the node answers the call, at an error status, quoting the path it was asked on
    a = await startLoopbackNode(
      firstOf(
        (r) =>
          r.body.includes('"gas_price"')
            ? {
                status: 400,
                headers: { "content-type": "application/json" },
                body: {
                  jsonrpc: "2.0",
                  id: JSON.parse(r.body).id,
                  error: { code: -32601, message: `no route ${r.url}` },
                },
              }
            : undefined,
        softwareNode(near, nodeState(near, 9000)),
      ),
    );
    gw = await startGateway({
      upstreams: { near: [`${a.url}/v3/${KEY_A}`] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 200 },
    });
    await eventually(
      () => gw.gateway.upstreams.group("near", "/")?.members[0]?.health.state === "healthy",
      5_000,
      "the node probed",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await a?.close();
    restore?.();
  });

  it("goes to the socket masked", async () => {
    const client = await Client.open(`ws://near.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const answer = await client.call("gas_price", [null]);
    client.close();
    expect(a.requests.some((r) => r.url.includes(KEY_A))).toBe(true);
    expect(answer.error?.message).toBe("no route /v3/…");
  });
});
