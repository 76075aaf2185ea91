import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { upstreamRedactor } from "../../src/config/upstream-name.js";
import { reportOf } from "../../src/proxy/operator.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// docs/configuration.md offers an upstream's `headers` for a provider's token (`X-Algo-API-Token`, an API
// key header, `Authorization: Bearer …`). A proxy's page echoing the request's headers quotes them: they are
// masked as the URL's credentials are, in GET /upstreams, the `upstream state` warn line and the page a
// caller gets (node-error-echo.test.ts holds the URL's part).
const USER = "gateway-user";
const PASSWORD = "s3cr3t-Passw0rd";
const BASIC = Buffer.from(`${USER}:${PASSWORD}`).toString("base64");
const TOKEN = "tok_9f8e7d6c5b4a39281706f5e4d3c2b1a0";
const BEARER = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LWJlYXJlcg.Zm9vYmFy1234";
const SECRETS = [BASIC, TOKEN, BEARER];

describe("a configured header's value, in a node's text", () => {
  it("is masked whole, its scheme kept, and its token alone", () => {
    const redact = upstreamRedactor(["https://node.example/rpc"], {
      "X-API-Key": TOKEN,
      Authorization: `Bearer ${BEARER}`,
    });
    expect(redact(`got Authorization: Bearer ${BEARER}, X-API-Key: ${TOKEN}`)).toBe(
      "got Authorization: Bearer …, X-API-Key: …",
    );
    expect(redact(`token ${BEARER} refused`)).toBe("token … refused");
    expect(redact(JSON.stringify({ headers: { "x-api-key": TOKEN } }))).toBe('{"headers":{"x-api-key":"…"}}');
  });

  it("a short one (under 6 characters) is a word the node's text holds for its own reasons", () => {
    const redact = upstreamRedactor(["https://node.example/rpc"], { "X-Shard": "7", "X-Mode": "full" });
    expect(redact("shard 7, mode full")).toBe("shard 7, mode full");
  });
});

describe("a proxy's page echoing the request's headers, for an upstream whose secret is a configured header", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    // the node answers as eth's until the prober has vouched for it (a node that failed before any probe
    // said which chain it is on is no last resort: unvouched-node-no-last-resort.test.ts), then the proxy
    // in front of it fails every request
    let failing = false;
    const answers = jsonRpcResponder({ eth_chainId: "0x1", eth_blockNumber: "0x2a" });
    node = await startLoopbackNode((r) =>
      failing
        ? {
            status: 502,
            headers: { "content-type": "text/plain" },
            body: `bad gateway: POST ${r.url} (authorization: ${r.headers.authorization ?? "-"}, x-api-key: ${r.headers["x-api-key"] ?? "-"})`,
          }
        : answers(r),
    );
    const host = new URL(node.url).host;
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: `http://${USER}:${PASSWORD}@${host}/basic`, name: "basic" },
          { url: `${node.url}/token`, name: "token", headers: { "X-API-Key": TOKEN } },
          { url: `${node.url}/bearer`, name: "bearer", headers: { Authorization: `Bearer ${BEARER}` } },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 200 },
    });
    const members = () => gw.gateway.upstreams.group("eth", "/")?.members ?? [];
    await eventually(
      () => members().length === 3 && members().every((m) => m.health.state === "healthy"),
      5000,
      "every upstream vouched for",
    );
    failing = true;
    await eventually(
      () =>
        (gw.gateway.upstreams.group("eth", "/")?.members ?? []).every(
          (m) => m.health.report().lastError !== null,
        ),
      5000,
      "every upstream probed",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("reached the node, which echoed them", () => {
    const seen = node.requests.map((r) => JSON.stringify(r.headers)).join("\n");
    for (const secret of SECRETS) expect(seen).toContain(secret);
  });

  // read at the probes' time (before any live call, whose last error is "HTTP 502" alone); the probe keeps
  // 80 characters of the page, so the head of each secret is what shows
  it("is masked in GET /upstreams", () => {
    const report = JSON.stringify(reportOf(gw.gateway.upstreams));
    expect(report).toContain("Bearer …");
    expect(report).toContain("x-api-key: …");
    for (const secret of SECRETS) expect(report).not.toContain(secret.slice(0, 16));
  });

  it("is masked in the `upstream state` warn line", () => {
    const lines = gw.logs.join("\n");
    expect(lines).toContain("upstream state");
    for (const secret of SECRETS) expect(lines).not.toContain(secret.slice(0, 16));
  });
});

// The page relayed to a caller: with no probes every node is in rotation, and a read the first node fails
// with its page goes on to the next; the page a caller gets is the last node's, which the rotation moves.
describe("a proxy's page echoing the request's headers, relayed to a caller", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    node = await startLoopbackNode((r) => ({
      status: 502,
      headers: { "content-type": "text/plain" },
      body: `bad gateway: POST ${r.url} (authorization: ${r.headers.authorization ?? "-"}, x-api-key: ${r.headers["x-api-key"] ?? "-"})`,
    }));
    const host = new URL(node.url).host;
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: `http://${USER}:${PASSWORD}@${host}/basic`, name: "basic" },
          { url: `${node.url}/token`, name: "token", headers: { "X-API-Key": TOKEN } },
          { url: `${node.url}/bearer`, name: "bearer", headers: { Authorization: `Bearer ${BEARER}` } },
        ],
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("is masked in it", async () => {
    const texts: string[] = [];
    for (let i = 0; i < 12; i++) {
      const answer = await gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_blockNumber", [], i) });
      texts.push(answer.text);
    }
    const all = texts.join("\n");
    expect(all).toContain("Bearer …");
    expect(all).toContain("x-api-key: …");
    for (const secret of SECRETS) expect(all).not.toContain(secret);
  });
});
