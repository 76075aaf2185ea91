import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// HEAD is GET without the body (RFC 9110 9.3.2), and a general-purpose server must take it (9.1): an uptime
// monitor sends it (curl -I, UptimeRobot's default). java-tron's servlets answer it as their GET
// (javax.servlet HttpServlet.doHead runs doGet and drops the body), yet the gateway answered every REST
// route's HEAD 405, with an Allow that named GET alone. A HEAD on a route a GET reaches is now relayed to the
// node as that GET, priced as it, and answered with its status and headers, without the body.
describe("HEAD on a REST route", () => {
  const label = (name: string): Endpoint => {
    const endpoint = endpointsByLabel.get(name);
    if (endpoint === undefined) throw new Error(`no ${name} label`);
    return endpoint;
  };
  const trx = label("trx");
  const algo = label("algo");
  let trxNode: LoopbackNode;
  let algoNode: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    trxNode = await startLoopbackNode(softwareNode(trx, () => nodeState(trx, 5_000)));
    algoNode = await startLoopbackNode(softwareNode(algo, () => nodeState(algo, 5_000)));
    gw = await startGateway({
      upstreams: {
        trx: Object.fromEntries(trx.mounts.map((m) => [m.path, [trxNode.url]])),
        algo: [algoNode.url],
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await trxNode?.close();
    await algoNode?.close();
  });

  for (const [name, path, node] of [
    ["trx", "/wallet/getnowblock", () => trxNode],
    ["algo", "/v2/status", () => algoNode],
  ] as const) {
    it(`${name} ${path}: GET's status and headers, no body, the node asked a GET`, async () => {
      const get = await gw.call(name, `/${KEYS.all}${path}`);
      expect(get.status).toBe(200);
      const from = node().requests.length;
      const head = await gw.call(name, `/${KEYS.all}${path}`, { method: "HEAD" });
      expect(head.status).toBe(200);
      expect(head.text).toBe("");
      expect(head.headers["content-type"]).toBe(get.headers["content-type"]);
      expect(head.headers["x-compute-units"]).toBe(get.headers["x-compute-units"]);
      const seen = node()
        .requests.slice(from)
        .filter((r) => r.url.startsWith(path));
      expect(seen.map((r) => r.method)).toEqual(["GET"]);
    });
  }

  it("a route a GET does not reach is refused 405 as before, its Allow unchanged", async () => {
    const from = trxNode.requests.length;
    const head = await gw.call("trx", `/${KEYS.all}/wallet/createtransaction`, { method: "HEAD" });
    expect(head.status).toBe(405);
    expect(head.headers.allow).toBe("POST");
    expect(trxNode.requests.slice(from).filter((r) => r.url.startsWith("/wallet/create"))).toEqual([]);
  });

  it("a method no route takes names HEAD beside GET in its Allow", async () => {
    const put = await gw.call("algo", `/${KEYS.all}/v2/status`, { method: "PUT", body: "{}" });
    expect(put.status).toBe(405);
    expect(put.headers.allow).toBe("GET, HEAD");
  });
});
