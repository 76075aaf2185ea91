import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A WebSocket connection whose node is a ledger behind the served head sends its reads at the head over
// HTTP to a node at that head (ws/head-reads.ts). When that node failed them (a 503 error page, as nginx
// in front of a node answers while its node is down), the caller got the gateway's error by its id, but
// the connection took that error for the node's answer: it was priced as a served call, and counted as
// answered, where the same failure on the connection's own node (or over HTTP) costs nothing and counts as
// the error (docs/compute-units.md). The error, taken for an answer, was also what calls waiting on the
// call in flight were given (docs/cache.md: they ask a node themselves). Stellar RPC, bridged over HTTP.
const HEAD = 5_000_000;
const NGINX_503 =
  "<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

describe("a read at the head sent to another node, which fails it", () => {
  const xlm = endpointsByLabel.get("xlm");
  if (xlm === undefined) throw new Error("no xlm in the registry");
  let states: NodeState[];
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    states = [nodeState(xlm, HEAD), nodeState(xlm, HEAD)];
    nodes = await Promise.all(
      states.map((state) => {
        const software = softwareNode(xlm, state);
        return startLoopbackNode((request) =>
          request.body.includes('"fails-there"')
            ? { status: 503, headers: { "content-type": "text/html" }, body: NGINX_503 }
            : software(request),
        );
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
    await gw?.close();
    await Promise.all(nodes?.map((node) => node.close()) ?? []);
    restore?.();
  });

  it("is the gateway's error by its id, costs nothing and counts as that error", async () => {
    const client = await Client.open(`ws://xlm.${DOMAIN}:${gw.port}/${KEYS.all}`);
    client.send(rpcBody("getLatestLedger", {}, "find-the-node"));
    await client.answerTo('"find-the-node"');
    const own = nodes.findIndex((node) => node.requests.some((r) => r.body.includes('"find-the-node"')));
    expect(own).toBeGreaterThanOrEqual(0);
    (states[1 - own] as NodeState).height = HEAD + 1;
    await eventually(
      () => gw.gateway.upstreams.group("xlm", "/")?.served.height === HEAD + 1,
      5_000,
      "served",
    );
    const units = () => gw.metric("gateway_compute_units_total", { label: "xlm" });
    const failed = () => gw.metric("gateway_requests_total", { label: "xlm", code: "UPSTREAM_BAD_RESPONSE" });
    const [unitsBefore, failedBefore] = [await units(), await failed()];
    client.send(rpcBody("getLatestLedger", {}, "fails-there"));
    const answer = await client.answerTo('"fails-there"');
    expect((nodes[1 - own] as LoopbackNode).requests.some((r) => r.body.includes('"fails-there"'))).toBe(
      true,
    );
    expect(answer.error?.data?.code).toBe("UPSTREAM_BAD_RESPONSE");
    await eventually(async () => (await failed()) === failedBefore + 1, 3_000, "counted as its error");
    expect(await units()).toBe(unitsBefore);
    client.close();
  });
});
