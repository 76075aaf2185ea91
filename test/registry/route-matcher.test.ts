import { describe, expect, it } from "vitest";
import { emptyTrie, insertRoute, parseRouteTemplate } from "../../codegen/route-template.js";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { matchRoute } from "../../src/registry/match-route.js";

const split = (path: string) => path.split("/").slice(1);

describe("route templates", () => {
  it("parse methods, literals, parameters and a trailing wildcard", () => {
    expect(parseRouteTemplate("GET|POST /a/{b}/c/{rest...}")).toEqual({
      text: "GET|POST /a/{b}/c/{rest...}",
      methods: ["GET", "POST"],
      segments: [
        { kind: "static", value: "a" },
        { kind: "param", name: "b" },
        { kind: "static", value: "c" },
        { kind: "rest", name: "rest" },
      ],
    });
  });

  it.each([
    ["GET", 'route "GET" needs "METHOD /path"'],
    ["FETCH /a", 'route "FETCH /a" has unknown HTTP method "FETCH"'],
    ["GET a", 'route "GET a" must have a path that starts with "/"'],
    ["GET /a//b", 'route "GET /a//b" has an empty path segment'],
    ["GET /a/../b", 'route "GET /a/../b" has a dot segment'],
    ["GET /{x...}/b", 'route "GET /{x...}/b": {x...} must be the last segment'],
    ["GET /{x}/{x}", 'route "GET /{x}/{x}" uses parameter {x} twice'],
    ["GET /a:{x}", 'route "GET /a:{x}": segment "a:{x}" is neither a literal nor a whole {parameter}'],
  ])("refuse %s", (text, message) => {
    expect(() => parseRouteTemplate(text)).toThrow(message);
  });
});

describe("the route trie", () => {
  const trie = emptyTrie();
  for (const [text, access] of [
    ["GET /blocks/{block}", "shared"],
    ["GET /blocks/best/extra", "shared"],
    ["POST /tx", "shared"],
    ["GET /files/{path...}", "dedicated"],
    ["GET /files/readme", "stream"],
  ] as const) {
    insertRoute(trie, parseRouteTemplate(text), access);
  }

  it.each([
    ["GET", "/blocks/12", { kind: "match", access: "shared", shape: "/blocks/{}" }],
    ["GET", "/blocks/best", { kind: "not-found" }],
    ["GET", "/blocks/best/extra", { kind: "match", access: "shared", shape: "/blocks/best/extra" }],
    ["GET", "/files/a/b/c", { kind: "match", access: "dedicated", shape: "/files/{...}" }],
    ["GET", "/files/readme", { kind: "match", access: "stream", shape: "/files/readme" }],
    ["GET", "/files", { kind: "not-found" }],
    ["GET", "/tx", { kind: "method-not-allowed", allow: ["POST"] }],
    ["GET", "/blocks", { kind: "not-found" }],
    ["constructor", "/tx", { kind: "method-not-allowed", allow: ["POST"] }],
    ["GET", "/__proto__", { kind: "not-found" }],
  ])("%s %s", (method, path, result) => {
    expect(matchRoute(trie, method, split(path))).toEqual(result);
  });

  it("serves the product's most-used REST calls on the real tables", () => {
    const routes = (label: string) => {
      const mount = endpointsByLabel.get(label)?.mounts.find((m) => m.policy.routes);
      if (mount?.policy.routes === undefined) throw new Error(`${label} has no routes`);
      return mount.policy.routes;
    };
    const calls: [string, string, string, string][] = [
      ["xtz", "GET", "/chains/main/blocks/head/header", "shared"],
      ["xtz", "GET", "/chains/main/blocks/BLxyz/context/contracts/tz1abc/balance", "shared"],
      ["xtz", "POST", "/chains/main/blocks/head/helpers/scripts/run_view", "shared"],
      ["xtz", "GET", "/monitor/heads/main", "stream"],
      ["vet", "GET", "/blocks/best", "shared"],
      ["vet", "POST", "/accounts/0xabc", "shared"],
      ["nem", "GET", "/chain/height", "shared"],
      ["nem", "GET", "/node/info", "shared"],
      ["algo", "GET", "/v2/transactions/pending/TXID", "shared"],
      ["trx", "POST", "/wallet/getnowblock", "shared"],
      ["trx", "POST", "/walletsolidity/getaccount", "shared"],
      ["ada", "GET", "/health", "shared"],
      ["near", "GET", "/status", "shared"],
    ];
    for (const [label, method, path, access] of calls) {
      expect(matchRoute(routes(label), method, split(path)), `${label} ${method} ${path}`).toMatchObject({
        kind: "match",
        access,
      });
    }
    expect(matchRoute(routes("xtz"), "GET", split("/network/peers")).kind).toBe("not-found");
    expect(matchRoute(routes("xtz"), "POST", split("/private/injection/operation")).kind).toBe("not-found");
    expect(matchRoute(routes("trx"), "POST", split("/wallet/easytransferbyprivate")).kind).toBe("not-found");
    expect(matchRoute(routes("algo"), "POST", split("/v2/shutdown")).kind).toBe("not-found");
  });
});
