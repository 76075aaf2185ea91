import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// An HTTP caller's read waits on an identical read in flight on a WebSocket connection (docs/cache.md,
// "Coalescing"), whose node is reached over HTTP (Stellar RPC: a bridged connection). That node failed the
// read (a 503 error page, as nginx in front of a node answers while its node is down): the connection's
// caller got the gateway's error by its id, UPSTREAM_BAD_RESPONSE, naming the connection's request id. That
// error was landed on the flight as if it were the node's answer: the HTTP caller got it (another caller's
// request id in it, at 200, priced as served) rather than asking a node itself, as the docs say a call
// waiting on one with no answer to share does; the label's other node was healthy.
const HEAD = 5_000_000;
const NGINX_503 =
  "<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

describe("a connection's read its node failed, with an HTTP caller waiting on it", () => {
  const xlm = endpointsByLabel.get("xlm");
  if (xlm === undefined) throw new Error("no xlm in the registry");
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  let restore: () => void;
  let release: () => void = () => {};
  let held = Promise.resolve();

  beforeAll(async () => {
    restore = resolveTestHosts();
    nodes = await Promise.all(
      [0, 1].map(() => {
        const software = softwareNode(xlm, nodeState(xlm, HEAD));
        return startLoopbackNode(async (request) => {
          if (!request.body.includes('"held-then-failed"')) return software(request);
          await held;
          return { status: 503, headers: { "content-type": "text/html" }, body: NGINX_503 };
        });
      }),
    );
    gw = await startGateway({
      upstreams: { xlm: nodes.map((node, i) => ({ url: node.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 10_000 },
    });
    await everyNodeInRotation(gw, "xlm");
  });
  afterAll(async () => {
    release();
    await gw?.close();
    await Promise.all(nodes?.map((node) => node.close()) ?? []);
    restore?.();
  });

  it("the HTTP caller asks a node itself, and gets its answer", async () => {
    held = new Promise((resolve) => {
      release = resolve;
    });
    const client = await Client.open(`ws://xlm.${DOMAIN}:${gw.port}/${KEYS.all}`);
    client.send(rpcBody("getLatestLedger", {}, "held-then-failed"));
    await eventually(
      () => nodes.some((node) => node.requests.some((r) => r.body.includes('"held-then-failed"'))),
      3_000,
      "the connection's read at its node",
    );
    const http = gw.call("xlm", `/${KEYS.all}`, { body: rpcBody("getLatestLedger", {}, 7) });
    await eventually(
      async () => (await gw.metric("gateway_cache_waiting", { label: "xlm" })) === 1,
      3_000,
      "the HTTP caller waiting on the connection's read",
    );
    release();
    const own = await client.answerTo('"held-then-failed"');
    client.close();
    expect(own.error?.data?.code).toBe("UPSTREAM_BAD_RESPONSE");
    const answer = await http;
    expect(answer.text).not.toContain("UPSTREAM_BAD_RESPONSE");
    expect((answer.json as { result?: { sequence?: number } }).result?.sequence).toBe(HEAD);
  });
});
