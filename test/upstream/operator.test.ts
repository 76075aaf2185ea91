import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_CONFIG, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { GatewayConfig } from "../../src/config/types.js";
import { freePort } from "../../src/dev/free-port.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { adminHere } from "../support/admin-here.js";
import { eventually } from "../support/eventually.js";
import { type FaultyNode, startFaultyNode } from "../support/faulty-node.js";
import { DOMAIN, KEYS, TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder } from "../support/loopback-node.js";

// The operator API, as the proxy runs it: on its own listener, never on the public port. GET /upstreams
// shows every upstream's state and numbers; cordon and uncordon move traffic, through the API and the CLI.

describe("the operator API", () => {
  let a: FaultyNode;
  let b: FaultyNode;
  let proxy: RunningProxy;
  let config: GatewayConfig;
  const logs: string[] = [];

  const operator = async (method: "GET" | "POST", path: string, body?: unknown) => {
    const r = await request(`http://127.0.0.1:${proxy.operatorPort}${path}`, {
      method,
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
    });
    return { status: r.statusCode, json: (await r.body.json()) as Record<string, unknown> };
  };
  const upstreams = async () => {
    const { json } = await operator("GET", "/upstreams");
    const [process] = json.processes as {
      labels: { label: string; upstreams: Record<string, unknown>[] }[];
    }[];
    return process?.labels.find((l) => l.label === "eth")?.upstreams ?? [];
  };
  const read = async (id: number) => {
    const r = await request(`http://127.0.0.1:${proxy.port}/${KEYS.all}/`, {
      method: "POST",
      headers: { host: `eth.${DOMAIN}`, "content-type": "application/json" },
      body: `{"jsonrpc":"2.0","id":${id},"method":"eth_blockNumber","params":[]}`,
    });
    await r.body.text();
    return r.statusCode;
  };
  const callers = (node: FaultyNode) => node.requests.filter((r) => /"id":9\d\d\d/.test(r.body)).length;
  const cli = (...args: string[]) => cliAt(`http://127.0.0.1:${proxy.operatorPort}`, ...args);
  const cliAt = (at: string, ...args: string[]) =>
    adminHere({ GATEWAY_CONFIG: "" }, "upstreams", ...args, "--proxy", at);

  beforeAll(async () => {
    const respond = (h: number) => jsonRpcResponder({ eth_blockNumber: `0x${h.toString(16)}` });
    [a, b] = await Promise.all([startFaultyNode(respond), startFaultyNode(respond)]);
    config = {
      ...DEFAULT_CONFIG,
      // what reaches the nodes is what this counts: no answer cache in between
      cache: { ...DEFAULT_CACHE, enabled: false },
      domain: DOMAIN,
      listen: { host: "127.0.0.1", port: 0 },
      operator: { listen: { host: "127.0.0.1", port: 0 } },
      keys: TEST_KEYS,
      upstreams: {
        eth: [
          { url: `http://user:secret-password@127.0.0.1:${a.port}`, name: "a" },
          { url: b.url, name: "b" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100, probeTimeoutMs: 300 },
      log: { level: "info", access: false },
    };
    proxy = await runProxy(
      config,
      createLogger("info", (line) => logs.push(line)),
    );
    await eventually(() => a.requests.length > 0 && b.requests.length > 0, 3000, "the first probes");
  });
  afterAll(async () => {
    await proxy?.close();
    await Promise.all([a?.close(), b?.close()]);
  });

  it("GET /upstreams shows each upstream's state, head, lag, latency, error rate, calls in flight and last error, and no credentials", async () => {
    await eventually(() => b.requests.length > 2, 3000, "a few probes");
    for (let id = 9000; id < 9010; id++) expect(await read(id)).toBe(200);
    const list = await upstreams();
    expect(list.map((u) => u.name)).toEqual(["a", "b"]);
    for (const upstream of list) {
      expect(upstream).toMatchObject({
        tier: "primary",
        weight: 1,
        state: "healthy",
        head: 1000,
        lagBlocks: 0,
        errorRate: 0,
        inFlight: 0,
        lastError: null,
        latencyMs: { p50: expect.any(Number), p95: expect.any(Number) },
      });
    }
    const { json } = await operator("GET", "/upstreams");
    expect(JSON.stringify(json)).not.toContain("secret-password");
  });

  it("cordon takes an upstream out of rotation until uncordoned, through the API and the operator CLI", async () => {
    const cordoned = await operator("POST", "/upstreams/cordon", { label: "eth", upstream: "a" });
    expect(cordoned).toEqual({
      status: 200,
      json: { label: "eth", upstream: "a", cordoned: true, matched: 1 },
    });
    expect((await upstreams()).find((u) => u.name === "a")?.state).toBe("cordoned");
    const onA = callers(a);
    for (let id = 9100; id < 9110; id++) expect(await read(id)).toBe(200);
    expect(callers(a)).toBe(onA);
    expect(logs.some((l) => l.includes('"msg":"upstream state"') && l.includes('"to":"cordoned"'))).toBe(
      true,
    );

    const uncordoned = await cli("uncordon", "--label", "eth", "--upstream", "a");
    expect(uncordoned).toMatchObject({ code: 0, out: "eth a: uncordoned (1)\n" });
    expect((await upstreams()).find((u) => u.name === "a")?.state).toBe("healthy");
    for (let id = 9200; id < 9210; id++) expect(await read(id)).toBe(200);
    expect(callers(a)).toBeGreaterThan(onA);

    const listed = await cli("list");
    expect(listed.code).toBe(0);
    expect(listed.out).toMatch(/^eth {2}served head 1000$/m);
    expect(listed.out).toMatch(
      /^eth {2}a {2}healthy {2}head 1000 {2}lag 0 {2}p50 [\d.]+ ms, p95 [\d.]+ ms {2}errors 0% {2}in flight 0$/m,
    );
    expect(listed.out).not.toContain("secret-password");
  }, 20_000);

  it("refuses what it does not know: a wrong upstream, a bad body, a wrong method, another path", async () => {
    // which name is wrong: the upstream (and what the label has), or the label
    expect(await operator("POST", "/upstreams/cordon", { label: "eth", upstream: "nope" })).toMatchObject({
      status: 404,
      json: {
        error: {
          code: "UPSTREAM_NOT_FOUND",
          label: "eth",
          upstream: "nope",
          reason: "eth's upstreams are a, b",
        },
      },
    });
    expect(await operator("POST", "/upstreams/cordon", { label: "eht", upstream: "a" })).toMatchObject({
      status: 404,
      json: { error: { reason: "no upstream is configured for the label eht" } },
    });
    expect(await operator("POST", "/upstreams/cordon", { label: "eth" })).toMatchObject({
      status: 400,
      json: { error: { code: "INVALID_FIELD", field: "upstream" } },
    });
    // the CLI says what the API said, and a proxy that is not there as such
    const wrong = await cli("cordon", "--label", "eth", "--upstream", "nope");
    expect(wrong.code).toBe(1);
    expect(wrong.err).toContain("UPSTREAM_NOT_FOUND");
    expect(wrong.err).toContain("eth's upstreams are a, b");
    const away = await cliAt(`http://127.0.0.1:${await freePort()}`, "list");
    expect(away.code).toBe(1);
    expect(away.err).toContain("OPERATOR_UNREACHABLE");
    expect(away.err).toContain("ECONNREFUSED");
    expect(away.err).not.toContain("INVALID_FIELD");
    expect((await operator("GET", "/upstreams/cordon")).status).toBe(405);
    expect(await operator("GET", "/metrics-or-anything")).toMatchObject({
      status: 404,
      json: {
        error: { code: "OPERATOR_ROUTE_NOT_FOUND", routes: expect.arrayContaining(["GET /upstreams"]) },
      },
    });
    expect((await cli("cordon", "--label", "eth")).code).toBe(1);
  });

  it("the CLI takes a --proxy URL written with its trailing slash", async () => {
    // `http://host:8082/` is that URL as a browser or a URL parser writes it; the CLI asked `//upstreams`
    // and printed OPERATOR_ROUTE_NOT_FOUND for a running operator API
    const list = await cliAt(`http://127.0.0.1:${proxy.operatorPort}/`, "list");
    expect(list.err).toBe("");
    expect(list.code).toBe(0);
    expect(list.out).toContain("eth  a  ");
  });

  it("the CLI never prints the password of a --proxy URL", async () => {
    // a password in --proxy is never printed, whatever the failure
    const port = await freePort();
    const away = await cliAt(`http://ops:s3cr3t-pw@127.0.0.1:${port}`, "list");
    expect(away.code).toBe(1);
    expect(away.err).toContain("OPERATOR_UNREACHABLE");
    expect(away.err).not.toContain("s3cr3t-pw");
    // nor of one no URL parser reads
    const unread = await cliAt(`http://ops:s3cr3t-pw@127.0.0.1:${port}x`, "list");
    expect(unread.code).toBe(1);
    expect(unread.err).toContain("OPERATOR_UNREACHABLE");
    expect(unread.err).not.toContain("s3cr3t-pw");
  });

  it("the CLI reaches an operator API behind a front that asks for the --proxy URL's user and password", async () => {
    // a front such as nginx's auth_basic: 401 with a challenge unless the request carries the credentials
    // (RFC 7617), else the operator API's answer as it gave it. fetch refuses a URL holding credentials, so
    // the CLI never asked, and said no operator API answered there
    const expected = `Basic ${Buffer.from("ops:s3cr3t pw").toString("base64")}`;
    const front = createHttpServer((req, res) => {
      if (req.headers.authorization !== expected) {
        res.writeHead(401, { "www-authenticate": 'Basic realm="operator"', "content-type": "text/html" });
        res.end("<html>401 Authorization Required</html>");
        return;
      }
      void request(`http://127.0.0.1:${proxy.operatorPort}${req.url}`).then(async (answer) => {
        res.writeHead(answer.statusCode, { "content-type": String(answer.headers["content-type"]) });
        res.end(await answer.body.text());
      });
    });
    await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
    const frontPort = (front.address() as { port: number }).port;
    try {
      const list = await cliAt(`http://ops:s3cr3t%20pw@127.0.0.1:${frontPort}`, "list");
      expect(list.err).toBe("");
      expect(list.code).toBe(0);
      expect(list.out).toContain("eth  a  ");
      const wrong = await cliAt(`http://ops:wrong-pw@127.0.0.1:${frontPort}`, "list");
      expect(wrong.code).toBe(1);
      expect(wrong.err).toContain("answered 401 with text/html");
      expect(wrong.err).not.toContain("wrong-pw");
    } finally {
      await new Promise((resolve) => front.close(resolve));
    }
  });

  it("the CLI says what answered at a --proxy that is not the operator API: its status and content type", async () => {
    // a server that answers, but not JSON: a documented failure saying what answered, not INTERNAL
    const web = createHttpServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html>not the operator API</html>");
    });
    await new Promise<void>((resolve) => web.listen(0, "127.0.0.1", resolve));
    const webPort = (web.address() as { port: number }).port;
    try {
      const html = await cliAt(`http://127.0.0.1:${webPort}`, "list");
      expect(html.code).toBe(1);
      expect(html.err).toMatch(/^error OPERATOR_UNREACHABLE: /);
      expect(html.err).toContain("answered 200 with text/html");
      expect(html.err).not.toContain("INTERNAL");
      const withPassword = await cliAt(`http://ops:s3cr3t-pw@127.0.0.1:${webPort}`, "list");
      expect(withPassword.code).toBe(1);
      expect(withPassword.err).toContain("OPERATOR_UNREACHABLE");
      expect(withPassword.err).not.toContain("s3cr3t-pw");
    } finally {
      await new Promise((resolve) => web.close(resolve));
    }
    // the proxy's public port answers JSON too, its own refusal: an easy slip (8080 for 8082), said so
    const publicPort = await cliAt(`http://127.0.0.1:${proxy.port}`, "list");
    expect(publicPort.code).toBe(1);
    expect(publicPort.err).toMatch(/^error OPERATOR_UNREACHABLE: /);
    expect(publicPort.err).toContain(
      "(UNKNOWN_NETWORK), not the operator API; is --proxy the operator address?",
    );
  });

  it("cannot be read or driven by a web page an operator's browser has open", async () => {
    // what a cross-site page can send without a preflight: a form or text/plain, with its Origin
    const page = await request(`http://127.0.0.1:${proxy.operatorPort}/upstreams/cordon`, {
      method: "POST",
      headers: { "content-type": "text/plain", origin: "https://evil.example" },
      body: JSON.stringify({ label: "eth", upstream: "a" }),
    });
    expect(page.statusCode).toBe(403);
    expect(page.headers["access-control-allow-origin"]).toBeUndefined();
    expect(((await page.body.json()) as { error: { code: string } }).error.code).toBe(
      "OPERATOR_PAGE_REFUSED",
    );
    // and without its Origin, the body's type alone keeps it out
    const plain = await request(`http://127.0.0.1:${proxy.operatorPort}/upstreams/cordon`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: JSON.stringify({ label: "eth", upstream: "a" }),
    });
    expect(((await plain.body.json()) as { error: { code: string } }).error.code).toBe(
      "UNSUPPORTED_MEDIA_TYPE",
    );
    const listed = (await upstreams()).find((u) => u.name === "a");
    expect(listed?.state).not.toBe("cordoned");
    // and no page may read what the API answers
    for (const path of ["/upstreams", "/healthz", "/readyz", "/metrics", "/nothing"]) {
      const answer = await request(`http://127.0.0.1:${proxy.operatorPort}${path}`, {
        headers: { origin: "https://evil.example" },
      });
      await answer.body.dump();
      expect(answer.headers["access-control-allow-origin"], path).toBeUndefined();
    }
  });

  it("a second proxy whose operator port is taken does not start, says which listener, and leaves no port open", async () => {
    const port = await freePort();
    const clash = runProxy(
      {
        ...config,
        listen: { host: "127.0.0.1", port },
        operator: { listen: { host: "127.0.0.1", port: proxy.operatorPort ?? 0 } },
      },
      createLogger("silent"),
    );
    await expect(clash).rejects.toThrow(
      /operator API cannot listen on 127\.0\.0\.1:\d+ \(operator\.listen\): .*EADDRINUSE/,
    );
    // the public port was never taken: another process may have it
    const server = createServer();
    await new Promise<void>((resolve, reject) =>
      server.once("error", reject).listen(port, "127.0.0.1", resolve),
    );
    await new Promise((resolve) => server.close(resolve));
  });

  it("is not on the public port", async () => {
    const r = await request(`http://127.0.0.1:${proxy.port}/upstreams`, {
      headers: { host: `eth.${DOMAIN}` },
    });
    expect(r.statusCode).toBe(401);
    await r.body.text();
  });
});
