import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { type FaultyNode, startFaultyNode } from "../support/faulty-node.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// docs/upstreams.md, States: `failing` after "`failAfter` live failures in a row (3): a reset, a timeout, a
// 5xx or 429"; docs/operations.md: gateway_upstream_attempts_total counts "attempts sent to each node:
// answered, failed (an error, a 5xx or 429), dismissed", and gateway_upstream_error_ratio "the share of its
// last 100 calls and probes that failed". A node that answers its probes but hangs on callers' reads until
// the call's deadline (limits.upstream.deadlineMs, equal to headersTimeoutMs as in the defaults) gives
// every caller UPSTREAM_TIMEOUT 504, yet none of those attempts is counted anywhere: the node stays
// `healthy` with error ratio 0 and no failed attempt, so GatewayUpstreamFailing never fires and the
// dashboard shows a clean node.
describe("attempts given up at the call's deadline, or by their caller", () => {
  let node: FaultyNode;
  let gw: RunningGateway;
  const endpoint = endpointsByLabel.get("eth");
  if (endpoint === undefined) throw new Error("no eth");

  beforeAll(async () => {
    node = await startFaultyNode((height) => softwareNode(endpoint, nodeState(endpoint, height)), {
      height: 5000,
    });
    // probes answer at once; callers' reads (eth_getBalance) take 5 s
    node.delayMs = 5000;
    node.slows = (r) => r.body.includes("eth_getBalance");
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, name: "hangs-on-reads" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 200, probeTimeoutMs: 300, failAfter: 3 },
      limits: { upstream: { ...DEFAULT_LIMITS.upstream, deadlineMs: 600, headersTimeoutMs: 600 } },
    });
    const state = () => gw.gateway.upstreams.group("eth", "/")?.members[0]?.health.state;
    await eventually(() => state() === "healthy", 5000, "in rotation");
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("counts each timed-out attempt as failed, and takes the node out after failAfter of them", async () => {
    for (let i = 0; i < 4; i++) {
      const address = `0x${String(i + 1).padStart(40, "0")}`;
      const answer = await gw.call("eth", `/${KEYS.all}`, {
        body: rpcBody("eth_getBalance", [address, "latest"]),
      });
      expect(answer.status).toBe(504);
    }
    const failed = await gw.metric("gateway_upstream_attempts_total", {
      upstream: "hangs-on-reads",
      outcome: "failed",
    });
    const ratio = await gw.metric("gateway_upstream_error_ratio", { upstream: "hangs-on-reads" });
    // out of rotation after failAfter of them (its good probes bring it back soon after: docs/upstreams.md).
    // An attempt's headers timeout is cut to the deadline's time left (call-run.ts): the two fire at once,
    // and the last one's words are either's, as the host's timers order them
    const wentFailing = gw.logs.some(
      (l) =>
        l.includes('"msg":"upstream state"') &&
        l.includes('"to":"failing"') &&
        /3 failed call\(s\), last timeout: (no answer within the call's deadline|UND_ERR_HEADERS_TIMEOUT)/.test(
          l,
        ),
    );
    expect({ failed, ratioAboveZero: ratio > 0, wentFailing }).toEqual({
      failed: 4,
      ratioAboveZero: true,
      wentFailing: true,
    });
  });

  it("an attempt the node had taken when its caller left is counted under some outcome", async () => {
    const outcomes = async () => {
      let sum = 0;
      for (const outcome of ["answered", "failed", "dismissed"])
        sum += await gw.metric("gateway_upstream_attempts_total", { upstream: "hangs-on-reads", outcome });
      return sum;
    };
    const before = await outcomes();
    const seen = node.requests.length;
    const address = `0x${"9".repeat(40)}`;
    await request(`${gw.origin}/${KEYS.all}`, {
      method: "POST",
      headers: { host: `eth.${DOMAIN}`, "content-type": "application/json" },
      body: rpcBody("eth_getBalance", [address, "latest"]),
      signal: AbortSignal.timeout(300),
    }).catch(() => undefined);
    await eventually(
      () => gw.logs.some((l) => l.includes('"error":"CLIENT_CLOSED"')),
      3000,
      "the access line of the call its caller left",
    );
    // the node did receive the attempt
    expect(node.requests.slice(seen).some((r) => r.body.includes(address.slice(2)))).toBe(true);
    expect(await outcomes()).toBe(before + 1);
  });
});
