import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { urlRedactor } from "../../src/config/upstream-name.js";
import { reportOf } from "../../src/proxy/operator.js";
import { UpstreamHealth } from "../../src/upstream/health.js";
import type { Upstream } from "../../src/upstream/upstreams.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// An upstream's name hides the secrets its URL holds (a provider's key as a path segment, credentials, a
// query's values). A node, or the provider's front, that answers with an error page quoting the request
// it was sent (Express's "Cannot POST /v3/<key>", a proxy's echo of the request line and headers) must not
// have those secrets written into the `upstream state` warn line, the prober's warn lines, or the last
// error GET /upstreams shows.
const PATH_KEY = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6";
const CUT_KEY = "f6e5d4c3b2a1f6e5d4c3b2a1f6e5d4c3";
const PAGE_KEY = "0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d";
const QUERY_KEY = "Qk7rT2mZ9xW4pL8s";
const USER = "gateway-user";
const PASSWORD = "s3cr3t-Passw0rd";
const BASIC = Buffer.from(`${USER}:${PASSWORD}`).toString("base64");
const SECRETS = [PATH_KEY, CUT_KEY, PAGE_KEY, QUERY_KEY, USER, PASSWORD, BASIC];

describe("a node's text quoting the secrets of its upstream's URL", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  const member = (path: string): Upstream => {
    const found = gw.gateway.upstreams
      .group("eth", "/")
      ?.members.find((m) => new URL(m.name.replace("…", "x")).pathname.startsWith(path));
    if (found === undefined) throw new Error(`no upstream at ${path}`);
    return found;
  };

  beforeAll(async () => {
    node = await startLoopbackNode((r) => {
      // a proxy's page that echoes the request line and its credentials, and a 2xx page with no JSON
      if (r.url.startsWith("/auth"))
        return {
          status: 502,
          headers: { "content-type": "text/plain" },
          body: `bad gateway: POST ${r.url} (${r.headers.authorization}, user ${USER} password ${PASSWORD})`,
        };
      if (r.url.startsWith("/page"))
        return {
          status: 200,
          headers: { "content-type": "text/html" },
          body: `<p>No route for ${r.url}</p>`,
        };
      // the key starts near the 80 characters the detail keeps of a page: cut in two there
      const pad = r.url.startsWith("/cut") ? "x".repeat(22) : "";
      return {
        status: 500,
        headers: { "content-type": "text/html" },
        body: `<pre>${pad}Internal error handling POST ${r.url}</pre>`,
      };
    });
    gw = await startGateway({
      upstreams: {
        eth: [
          `${node.url}/v3/${PATH_KEY}`,
          `${node.url}/cut/v3/${CUT_KEY}`,
          `${node.url}/page/${PAGE_KEY}`,
          `http://${USER}:${PASSWORD}@${new URL(node.url).host}/auth?apikey=${QUERY_KEY}&chain=1`,
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 200 },
    });
    await eventually(
      () =>
        ["/v3", "/cut", "/auth"].every((path) => member(path).health.state === "failing") &&
        member("/page").health.report().lastError !== null &&
        gw.logs.some((l) => l.includes("upstream head unknown")),
      5000,
      "every upstream probed",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("reached the node, which quoted it back", () => {
    const seen = node.requests.map((r) => `${r.url} ${r.headers.authorization ?? ""}`).join("\n");
    for (const secret of [PATH_KEY, CUT_KEY, PAGE_KEY, QUERY_KEY, BASIC]) expect(seen).toContain(secret);
  });

  it("is written as the upstream's name writes it, in the last error the operator API shows", () => {
    const report = JSON.stringify(reportOf(gw.gateway.upstreams));
    for (const secret of SECRETS) expect(report).not.toContain(secret);
    // no head of a key cut short either
    expect(report).not.toContain(CUT_KEY.slice(0, 8));
    expect(member("/v3").health.report().lastError).toContain("POST /v3/…");
    expect(member("/auth").health.report().lastError).toContain("/auth?apikey=…&chain=…");
    expect(member("/auth").health.report().lastError).toContain("Basic …");
    expect(member("/page").health.report().lastError).toContain("No route for /page/…");
  });

  it("is not written to the log", () => {
    const lines = gw.logs.join("\n");
    expect(lines).toContain("upstream state");
    expect(lines).toContain("upstream chain unknown");
    for (const secret of SECRETS) expect(lines).not.toContain(secret);
    expect(lines).not.toContain(CUT_KEY.slice(0, 8));
  });
});

describe("an upstream's redactor", () => {
  it("masks a live call's failure as a probe's, in the last error and the reason the log is given", () => {
    const reasons: string[] = [];
    const health = new UpstreamHealth(
      { takeOut: true, failAfter: 1, recoverAfter: 1 },
      (_from, _to, reason) => reasons.push(reason),
      "healthy",
      urlRedactor(`https://node.example/v3/${PATH_KEY}`),
    );
    health.failed("status", `Cannot POST /v3/${PATH_KEY}`);
    expect(health.report().lastError).toBe("status: Cannot POST /v3/…");
    expect(reasons).toEqual(["1 failed call(s), last status: Cannot POST /v3/…"]);
  });

  it("masks credentials, as written and decoded, and a query's values, by name or without one", () => {
    const redact = urlRedactor(
      "https://us%40er:p%2Fss-word1@node.example/rpc?key=abc%2Bdef123&net=1&LoneKey4567",
    );
    expect(redact("GET /rpc?key=abc%2Bdef123&net=1&LoneKey4567 as us%40er:p%2Fss-word1@node")).toBe(
      "GET /rpc?key=…&net=…&… as …@node",
    );
    expect(redact("user us@er, password p/ss-word1, key abc+def123")).toBe("user us@er, password …, key …");
    // a short value is masked only where it stands as the URL writes it: "1" elsewhere is left be
    expect(redact("HTTP 501")).toBe("HTTP 501");
  });

  it("masks the key of an upstream's own WebSocket URL too", () => {
    const redact = urlRedactor("https://node.example/rpc", `wss://node.example/ws/v3/${CUT_KEY}`);
    expect(redact(`upgrade refused for /ws/v3/${CUT_KEY}`)).toBe("upgrade refused for /ws/v3/…");
  });

  it("leaves text alone for a URL with nothing to hide, and a path that only looks long", () => {
    const redact = urlRedactor("http://node.example:8545/jsonrpc-over-http-endpoint");
    expect(redact("Cannot POST /jsonrpc-over-http-endpoint")).toBe("Cannot POST /jsonrpc-over-http-endpoint");
  });
});

// The same page relayed to a caller: a node's refusal is the caller's answer, and the key in it the
// operator's. Express's 404 ("Cannot GET /v3/<key>/v2/accounts/…") from a provider's front before algod.
describe("a node's refusal relayed to its caller, quoting its upstream's secrets", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    node = await startLoopbackNode((r) => {
      if (r.url.endsWith("/v2/status")) return { body: { "last-round": 7 } };
      // Express's res.redirect at a provider's front that wants a trailing slash: its page names the target
      if (r.url.includes("/v2/blocks/"))
        return {
          status: 308,
          headers: { "content-type": "text/plain; charset=utf-8", location: `${r.url}/` },
          body: `Permanent Redirect. Redirecting to ${r.url}/`,
        };
      return {
        status: 404,
        headers: { "content-type": "text/html" },
        body: `<pre>Cannot GET ${r.url}</pre>`,
      };
    });
    gw = await startGateway({ upstreams: { algo: [`${node.url}/v3/${PATH_KEY}`] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("reaches the caller with the secrets masked, and a length that is the masked page's", async () => {
    const answer = await gw.call("algo", `/${KEYS.all}/v2/accounts/ADDRESS`);
    expect(answer.status).toBe(404);
    expect(answer.text).toBe(`<pre>Cannot GET /v3/…/v2/accounts/ADDRESS</pre>`);
    expect(Number(answer.headers["content-length"])).toBe(Buffer.byteLength(answer.text));
    expect((await gw.call("algo", `/${KEYS.all}/v2/status`)).json).toEqual({ "last-round": 7 });
  });

  it("a redirect's page too: a 3xx is a front's answer, whose page may name the path it was asked on", async () => {
    const answer = await gw.call("algo", `/${KEYS.all}/v2/blocks/7`);
    expect(answer.status).toBe(308);
    expect(answer.text).toBe("Permanent Redirect. Redirecting to /v3/…/v2/blocks/7/");
    expect(answer.headers.location).toBeUndefined();
  });
});
