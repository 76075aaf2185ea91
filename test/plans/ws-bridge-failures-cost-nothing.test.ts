import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { UsageRecorder } from "../../src/keys/usage.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// What a user saw: on near/xlm/ton/trx WebSockets, calls the node failed (answered UPSTREAM_* or
// WRITE_NOT_CONFIRMED by the gateway) were billed as served calls and spent the quota.
// docs/compute-units.md: "A call the gateway refuses, rate limits or fails costs nothing"; docs/plans.md:
// "Over a WebSocket a call is counted when it is answered, as over HTTP". On a label whose nodes serve
// JSON-RPC over HTTP only (near, xlm, ton, trx: registry webSocketOverHttp), a message the node answered
// with nothing usable (a balancer's 502 page, an answer over maxResponseBytes, no answer in time) gets the
// gateway's own UPSTREAM_BAD_RESPONSE / UPSTREAM_RESPONSE_TOO_LARGE / UPSTREAM_TIMEOUT, as an HTTP caller
// does: over HTTP each costs 0 (X-Compute-Units: 0), but over the WebSocket each was counted as served, at
// the call's full price, in the key's usage, the quota and gateway_compute_units_total; a write the node
// failed (WRITE_NOT_CONFIRMED) at 250 CU.

const near = endpointsByLabel.get("near");
if (near === undefined) throw new Error("no near in the registry");
const HEIGHT = 9000;

describe("a bridged label's node failure costs nothing over a WebSocket, as over HTTP", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void;
  let mode: "html-502" | "large" | "slow" | "ok" = "ok";
  const recorded: Parameters<UsageRecorder["record"]>[] = [];

  beforeAll(async () => {
    restore = resolveTestHosts();
    const software = softwareNode(near, nodeState(near, HEIGHT));
    node = await startLoopbackNode(async (request) => {
      if (!/"id":"?(1\d\d\d|w|h)/.test(request.body) || mode === "ok") return software(request);
      if (mode === "html-502")
        return { status: 502, headers: { "content-type": "text/html" }, body: "<html>502</html>" };
      if (mode === "slow") return new Promise<undefined>(() => {});
      return { body: { jsonrpc: "2.0", id: 1, result: "x".repeat(4096) } };
    });
    gw = await startGateway({
      upstreams: { near: [node.url] },
      limits: {
        upstream: {
          ...DEFAULT_LIMITS.upstream,
          maxResponseBytes: 2048,
          headersTimeoutMs: 500,
          deadlineMs: 800,
        },
      },
      usage: { record: (...args) => recorded.push(args) },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  const spent = () => gw.metric("gateway_compute_units_total", { label: "near" });

  it("over HTTP: each failure's X-Compute-Units is 0 and nothing is counted", async () => {
    for (const m of ["html-502", "large"] as const) {
      mode = m;
      const before = await spent();
      const answer = await gw.call("near", `/${KEYS.all}`, { body: rpcBody("status", [], 1001) });
      expect(answer.status).toBeGreaterThanOrEqual(500);
      expect(answer.headers["x-compute-units"]).toBe("0");
      expect(await spent()).toBe(before);
    }
  });

  it("over a WebSocket: the same failures cost nothing either", async () => {
    const client = await Client.open(`ws://near.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const costs: Record<string, number> = {};
    for (const m of ["html-502", "large", "slow"] as const) {
      mode = m;
      const before = await spent();
      const count = recorded.length;
      const answer = await client.call("status", []);
      expect(answer.error?.data?.code).toMatch(/^UPSTREAM_/);
      await eventually(() => recorded.length > count, 3_000, "the message counted");
      const [, , , errors, units] = recorded.at(-1) ?? [];
      costs[m] = (units as number) + (await spent()) - before + (errors === 0 ? 1000 : 0);
    }
    mode = "html-502";
    const before = await spent();
    const count = recorded.length;
    client.send('{"jsonrpc":"2.0","id":"w","method":"send_tx","params":{"signed_tx_base64":"AAAA"}}');
    expect((await client.answerTo('"w"')).error?.data?.code).toBe("WRITE_NOT_CONFIRMED");
    await eventually(() => recorded.length > count, 3_000, "the write counted");
    const [, , , errors, units] = recorded.at(-1) ?? [];
    costs.write = (units as number) + (await spent()) - before + (errors === 0 ? 1000 : 0);
    client.close();
    // each: its usage units + its gateway_compute_units_total + 1000 when usage counted it as no error
    expect(costs).toEqual({ "html-502": 0, large: 0, slow: 0, write: 0 });
  });
});

// The customer-visible end of it: a quota of 20 CU on near (status: 10 CU). Two calls the node failed,
// each answered UPSTREAM_BAD_RESPONSE, spent the whole quota: the next call, which the node would answer,
// was refused QUOTA_EXCEEDED (over HTTP the same two failures cost nothing).
describe("a bridged label's node failures do not spend a WebSocket caller's quota", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void;
  let failing = true;
  const KEY = "FNbridgeQuota0000000000000000000";

  beforeAll(async () => {
    restore = resolveTestHosts();
    const software = softwareNode(near, nodeState(near, HEIGHT));
    node = await startLoopbackNode(async (request) => {
      if (!/"id":"?1\d\d\d/.test(request.body) || !failing) return software(request);
      return { status: 502, headers: { "content-type": "text/html" }, body: "<html>502</html>" };
    });
    const { DEFAULT_PLANS, PLAN_FIELDS } = await import("../../src/config/defaults.js");
    gw = await startGateway({
      upstreams: { near: [node.url] },
      plans: {
        ...DEFAULT_PLANS,
        small: {
          ...PLAN_FIELDS,
          computeUnitRate: { perSecond: 1_000_000, burst: 1_000_000 },
          dailyQuota: 20,
        },
      },
      keys: [{ key: KEY, networks: "*", plan: "small", rate: { perSecond: 10_000, burst: 10_000 } }],
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("two failed calls, then one the node answers", async () => {
    const client = await Client.open(`ws://near.${DOMAIN}:${gw.port}/${KEY}`);
    expect((await client.call("status", [])).error?.data?.code).toBe("UPSTREAM_BAD_RESPONSE");
    expect((await client.call("status", [])).error?.data?.code).toBe("UPSTREAM_BAD_RESPONSE");
    failing = false;
    const third = await client.call("status", []);
    expect(third.error?.data?.code).toBeUndefined();
    expect(third.result).toBeDefined();
    client.close();
  });
});
