import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// java-tron's HTTP API is servlets mapped at their exact paths in an embedded Jetty 9.4.53 with no default
// servlet and no error handler of its own: a path that is no servlet's (under /wallet/ or elsewhere) is
// Jetty's Default404Servlet, whose 404 the Server's ErrorHandler writes as the Accept header asks (an HTML
// page by default, JSON or plain text on request). The loopback java-tron (node-software.ts jetty404)
// answers so.

const trx = endpointsByLabel.get("trx") as Endpoint;
const HEIGHT = 70_000_000;

describe("the loopback java-tron's answer for a path that is no route (Jetty 9.4's error page)", () => {
  let node: LoopbackNode;
  beforeAll(async () => {
    node = await startLoopbackNode(softwareNode(trx, nodeState(trx, HEIGHT)));
  });
  afterAll(async () => {
    await node?.close();
  });

  const send = async (path: string, init: RequestInit = {}) => {
    const r = await fetch(`${node.url}${path}`, init);
    return {
      status: r.status,
      type: r.headers.get("content-type"),
      server: r.headers.get("server"),
      cache: r.headers.get("cache-control"),
      text: await r.text(),
    };
  };

  it("an unknown path under /wallet/, any Accept: the HTML page naming the path", async () => {
    const r = await send("/wallet/nosuchservlet?visible=true", { method: "POST", body: "{}" });
    expect(r).toMatchObject({
      status: 404,
      type: "text/html;charset=iso-8859-1",
      server: "Jetty(9.4.53.v20231009)",
      cache: "must-revalidate,no-cache,no-store",
    });
    expect(r.text).toContain("<title>Error 404 Not Found</title>");
    expect(r.text).toContain("<tr><th>URI:</th><td>/wallet/nosuchservlet</td></tr>");
    expect(r.text).toContain(
      "<tr><th>SERVLET:</th><td>org.eclipse.jetty.servlet.ServletHandler$Default404Servlet-",
    );
    expect(r.text).toContain(
      '<hr/><a href="https://eclipse.org/jetty">Powered by Jetty:// 9.4.53.v20231009</a><hr/>',
    );
  });

  it("elsewhere too, and a route's path in another case is no route", async () => {
    for (const path of ["/", "/nosuch", "/wallet/GetNowBlock", "/wallet/getnowblock/"]) {
      const r = await send(path, { headers: { accept: "text/html" } });
      expect(r.status, path).toBe(404);
      expect(r.text, path).toContain(`<tr><th>URI:</th><td>${path}</td></tr>`);
    }
  });

  it("Accept: application/json gets Jetty's JSON, text/plain its text, an unwritable type no body", async () => {
    const json = await send("/wallet/nosuch", { headers: { accept: "application/json" } });
    expect(json.status).toBe(404);
    expect(json.type).toBe("application/json");
    expect(JSON.parse(json.text)).toEqual({
      servlet: expect.stringMatching(/^org\.eclipse\.jetty\.servlet\.ServletHandler\$Default404Servlet-/),
      message: "Not Found",
      url: "/wallet/nosuch",
      status: "404",
    });
    const plain = await send("/wallet/nosuch", { headers: { accept: "text/plain" } });
    expect(plain.type).toBe("text/plain;charset=iso-8859-1");
    expect(plain.text).toMatch(/^HTTP ERROR 404 Not Found\nURI: \/wallet\/nosuch\nSTATUS: 404\n/);
    const none = await send("/wallet/nosuch", { headers: { accept: "image/png" } });
    expect(none).toMatchObject({ status: 404, text: "" });
  });

  it("a route it serves is unchanged", async () => {
    const r = await send("/wallet/getnowblock", { method: "POST", body: "{}" });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toMatchObject({ block_header: { raw_data: { number: HEIGHT } } });
  });
});

describe("the gateway in front of java-tron, for a path that is no route", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    node = await startLoopbackNode(softwareNode(trx, nodeState(trx, HEIGHT)));
    gw = await startGateway({
      upstreams: { trx: [{ url: node.url, name: "n0" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("answers it itself, without asking the node", async () => {
    const r = await gw.call("trx", `/${KEYS.all}/wallet/nosuchservlet`, { method: "POST", body: "{}" });
    expect(r.status, r.text).toBe(404);
    expect(r.text).not.toContain("Jetty");
    // the node's other requests are the prober's (its head, its solidified block), whenever they come
    expect(node.requests.filter((request) => request.url.includes("nosuchservlet"))).toEqual([]);
  });
});
