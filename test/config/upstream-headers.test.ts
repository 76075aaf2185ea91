import { describe, expect, it } from "vitest";
import { rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, startLoopbackNode } from "../support/loopback-node.js";
import { configProblems } from "./config-problems.js";

// An upstream's `headers` (and tracing's) were any strings: a name that is not an HTTP token (a space
// typed for a dash) or a value with CR or LF passed --check-config and the start, and then undici refused
// every request to that node (UND_ERR_INVALID_ARG), which callers got as 502 UPSTREAM_BAD_RESPONSE, "The
// upstream node sent an invalid response", for a request that never left the gateway. Such headers are
// now refused at start; an argument undici still refuses is the gateway's own failure, INTERNAL.
describe("the headers the gateway sends are checked at start", () => {
  it("an upstream's header that frames the message (undici's own) is refused, at the name", () => {
    const problems = configProblems(
      'upstreams: { algo: [ { url: "http://127.0.0.1:1", headers: { "Transfer-Encoding": "chunked", Connection: "upgrade" } } ] }\n',
    );
    const lines = problems.split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /\.yaml:1:\d+: upstreams\.algo\[0\]\.headers\.Transfer-Encoding: the gateway frames its own requests/,
    );
    expect(lines[1]).toContain("headers.Connection");
    expect(
      configProblems(
        'upstreams: { algo: [ { url: "http://127.0.0.1:1", headers: { Host: "node.example" } } ] }\n',
      ),
    ).toBe("");
  });

  it("an upstream's header name that is not an HTTP token is refused, at the name", () => {
    const problems = configProblems(
      'upstreams: { algo: [ { url: "http://127.0.0.1:1", headers: { "X-Algo API Token": "abc" } } ] }\n',
    );
    expect(problems.split("\n")).toHaveLength(1);
    expect(problems).toMatch(
      /\.yaml:1:62: \/upstreams\/algo\/0\/headers .*an HTTP token.* \(X-Algo API Token\)$/,
    );
  });

  it("an upstream's header value with CR, LF or NUL is refused", () => {
    for (const value of ["abc\\r\\nX-Injected: 1", "abc\\ndef", "abc\\0def"])
      expect(
        configProblems(
          `upstreams: { eth: [ { url: "http://127.0.0.1:1", headers: { "X-Api-Token": "${value}" } } ] }\n`,
        ),
      ).toMatch(/\.yaml:1:\d+: \/upstreams\/eth\/0\/headers\/X-Api-Token .*no CR, LF, NUL/);
  });

  it("tracing's headers are held to the same", () => {
    const problems = configProblems(
      'tracing: { endpoint: "http://127.0.0.1:4318", headers: { "Authorization Bearer": "x", "X-Ok": "a\\rb" } }\n',
    );
    const lines = problems.split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/\/tracing\/headers .*an HTTP token.* \(Authorization Bearer\)$/);
    expect(lines[1]).toMatch(/\/tracing\/headers\/X-Ok .*no CR, LF, NUL/);
  });

  it("headers undici sends are taken", () => {
    expect(
      configProblems(
        'upstreams: { eth: [ { url: "http://127.0.0.1:1", headers: { "X-Algo-API-Token": "a b\\tc=/+", "x_key.v2": "" } } ] }\ntracing: { headers: { Authorization: "Bearer abc" } }\n',
      ),
    ).toBe("");
  });

  it("a header undici refuses at the request is the gateway's failure, not the node's bad answer", async () => {
    const node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    // a config built without the file's checks, as a header the checks do not know would reach undici
    const gw = await startGateway({
      upstreams: { bsc: [{ url: node.url, headers: { "X-Algo API Token": "abc" } }] },
      publicHosts: { "bsc-public.gw.test": "bsc" },
    });
    try {
      const call = (body: string) => gw.call("bsc", "/", { host: "bsc-public.gw.test", body });
      const read = await call(rpcBody("eth_blockNumber"));
      expect(read.status).toBe(500);
      expect(read.text).toContain("Internal gateway error");
      // a write that never left the gateway is no unconfirmed write either
      const write = await call(rpcBody("eth_sendRawTransaction", ["0x02f8"]));
      expect(write.status).toBe(500);
      expect(write.text).toContain("Internal gateway error");
      expect(node.requests).toHaveLength(0);
      // what the operator finds: the access line names the upstream whose headers could not be sent
      const lines = gw.logs.map((line) => JSON.parse(line)).filter((line) => line.msg === "request");
      expect(lines.map((l) => [l.level, l.error, l.upstream])).toEqual([
        ["warn", "INTERNAL", node.url],
        ["warn", "INTERNAL", node.url],
      ]);
    } finally {
      await gw.close();
      await node.close();
    }
  });
});
