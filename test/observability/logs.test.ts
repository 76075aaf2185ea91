import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/dev/free-port.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// What the logs say about a call: the access line names the upstream that served it, how many upstreams
// were tried and the node's own share of the time. A call a node failed is a warning, written even with the
// access log off, with its error code and the upstream's name: never the upstream's credentials or the key.

describe("the logs", () => {
  let node: LoopbackNode;
  let served: RunningGateway;
  let quiet: RunningGateway;
  let deadPort = 0;
  const lines = (gw: RunningGateway) => gw.logs.map((l) => JSON.parse(l) as Record<string, unknown>);

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x1" }));
    deadPort = await freePort();
    const dead = `http://ops:s3cret@127.0.0.1:${deadPort}/rpc`;
    served = await startGateway({ upstreams: { eth: [{ url: node.url, name: "eth-a" }], avax: [dead] } });
    quiet = await startGateway({
      upstreams: { eth: [node.url], avax: [dead] },
      log: { level: "info", access: false },
    });
  });
  afterAll(async () => {
    await Promise.all([served?.close(), quiet?.close()]);
    await node?.close();
  });

  it("an access line names the upstream that answered, the attempts and the node's own time", async () => {
    expect((await served.call("eth", `/${KEYS.all}/`, { body: rpcBody("eth_blockNumber") })).status).toBe(
      200,
    );
    const line = lines(served).find((l) => l.msg === "request" && l.label === "eth");
    expect(line).toMatchObject({ level: "info", upstream: "eth-a", attempts: 1, status: 200 });
    expect(line?.upstreamMs).toEqual(expect.any(Number));
    expect(line?.upstreamMs as number).toBeLessThanOrEqual(line?.ms as number);
  });

  it("a call no node could serve is a warning with its code and the upstream's name, credentials left out", async () => {
    for (const gw of [served, quiet]) {
      expect((await gw.call("avax", `/${KEYS.all}/`, { body: rpcBody("eth_blockNumber") })).status).toBe(503);
      const line = lines(gw).find((l) => l.msg === "request" && l.label === "avax");
      expect(line).toMatchObject({
        level: "warn",
        error: "NO_UPSTREAM",
        upstream: `http://127.0.0.1:${deadPort}/rpc`,
        attempts: 1,
        status: 503,
      });
      const text = gw.logs.join("\n");
      expect(text).not.toContain("s3cret");
      expect(text).not.toContain("ops:");
      expect(text).not.toContain(KEYS.all);
    }
  });

  it("a call refused for its method names it in its access line and its metric, as its caller is told", async () => {
    const refused = await served.call("eth", `/${KEYS.all}/`, {
      body: rpcBody("debug_traceTransaction", [`0x${"ab".repeat(32)}`]),
    });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('"method":"debug_traceTransaction"');
    const line = lines(served).find((l) => l.msg === "request" && l.error === "METHOD_NOT_ON_PLAN");
    expect(line).toMatchObject({ method: "debug_traceTransaction", status: 403 });
    expect(
      await served.metric("gateway_requests_total", {
        code: "METHOD_NOT_ON_PLAN",
        method: "debug_traceTransaction",
      }),
    ).toBe(1);
    // a method no interface has is the caller's own text: never a metric's label
    await served.call("eth", `/${KEYS.all}/`, { body: rpcBody("eth_noSuchMethod") });
    expect(await served.metric("gateway_requests_total", { code: "METHOD_NOT_FOUND", method: "other" })).toBe(
      1,
    );
  });

  it("with the access log off, a served call writes nothing", async () => {
    const before = quiet.logs.length;
    expect((await quiet.call("eth", `/${KEYS.all}/`, { body: rpcBody("eth_blockNumber") })).status).toBe(200);
    expect(quiet.logs.slice(before)).toEqual([]);
  });
});
