import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// Browser dapps call node endpoints straight from the page: preflights pass, answers are readable.
describe("CORS", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_chainId: "0x1" }));
    gw = await startGateway({ upstreams: { eth: [node.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("answers a preflight without reaching the upstream", async () => {
    const r = await gw.call("eth", `/${KEYS.all}/`, {
      method: "OPTIONS",
      headers: { origin: "https://dapp.example", "access-control-request-method": "POST" },
    });
    expect(r.status).toBe(204);
    expect(r.headers["access-control-allow-origin"]).toBe("*");
    expect(r.headers["access-control-allow-methods"]).toContain("POST");
    expect(node.requests).toHaveLength(0);
    // every answer carries its request id, the one its access line names
    expect(r.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("allows the request headers the browser asks for, as SDKs send their own (Stellar's X-Client-Name)", async () => {
    const asked = "content-type, x-client-name, x-client-version, traceparent";
    const r = await gw.call("eth", `/${KEYS.all}/`, {
      method: "OPTIONS",
      headers: {
        origin: "https://dapp.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": asked,
      },
    });
    expect(r.status).toBe(204);
    expect(r.headers["access-control-allow-headers"]).toBe(asked);
    // a list that is not header names gets the standard ones, not itself echoed
    const odd = await gw.call("eth", `/${KEYS.all}/`, {
      method: "OPTIONS",
      headers: { "access-control-request-method": "POST", "access-control-request-headers": "a b, <c>" },
    });
    expect(odd.headers["access-control-allow-headers"]).toBe("content-type, accept, authorization");
  });

  it("lets any origin read answers and errors", async () => {
    const ok = await gw.call("eth", `/${KEYS.all}/`, { body: rpcBody("eth_chainId") });
    expect(ok.headers["access-control-allow-origin"]).toBe("*");
    const refused = await gw.call("eth", "/FNnope000000000000000000/", { body: rpcBody("eth_chainId") });
    expect(refused.status).toBe(401);
    expect(refused.headers["access-control-allow-origin"]).toBe("*");
  });
});
