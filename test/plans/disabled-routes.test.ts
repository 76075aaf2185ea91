import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE } from "../../src/config/defaults.js";
import { loadConfig } from "../../src/config/load.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway, TEST_KEYS } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A plan's `disabledMethods` takes REST routes in the registry's shape, as docs/plans.md writes them
// (`GET /chains/{}/blocks/{}`): the deployment file that names one loads, and the route is refused on the
// plan while the label's other routes are served. The config's schema refused that very entry.
describe("a plan that disables a REST route", () => {
  const xtz = endpointsByLabel.get("xtz") as Endpoint;
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    const file = join(mkdtempSync(join(tmpdir(), "plans-")), "gateway.yaml");
    writeFileSync(file, 'plans:\n  shared:\n    disabledMethods: ["GET /chains/{}/blocks/{}", "debug_*"]\n');
    const { plans } = loadConfig(endpointsByLabel, { GATEWAY_CONFIG: file });
    node = await startLoopbackNode(softwareNode(xtz, nodeState(xtz, 5_000_000)));
    gw = await startGateway({
      upstreams: { xtz: [{ url: node.url }] },
      plans,
      keys: TEST_KEYS,
      cache: { ...DEFAULT_CACHE, enabled: false },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("loads from the deployment file as docs/plans.md writes it", () => {
    const file = join(mkdtempSync(join(tmpdir(), "plans-")), "gateway.yaml");
    writeFileSync(file, 'plans:\n  shared:\n    disabledMethods: ["GET /chains/{}/blocks/{}", "POST /*"]\n');
    expect(loadConfig(endpointsByLabel, { GATEWAY_CONFIG: file }).plans.shared?.disabledMethods).toEqual([
      "GET /chains/{}/blocks/{}",
      "POST /*",
    ]);
  });

  it("refuses the route on the plan, and serves the label's others", async () => {
    const refused = await gw.call("xtz", `/${KEYS.all}/chains/main/blocks/head`, { method: "GET" });
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({ error: { code: "METHOD_NOT_ON_PLAN" } });
    // named as the plan names it, by its shape: never the path as sent, whose segments are the caller's
    expect(JSON.stringify(refused.json)).toContain('"route":"GET /chains/{}/blocks/{}"');
    expect(node.requests.filter((r) => r.url.endsWith("/blocks/head"))).toHaveLength(0);
    const served = await gw.call("xtz", `/${KEYS.all}/chains/main/blocks/head/header`, { method: "GET" });
    expect(served.status).toBe(200);
  });

  it("still refuses a method name that is neither a method nor a route", () => {
    const file = join(mkdtempSync(join(tmpdir(), "plans-")), "gateway.yaml");
    writeFileSync(file, 'plans:\n  shared:\n    disabledMethods: ["GET chains blocks"]\n');
    expect(() => loadConfig(endpointsByLabel, { GATEWAY_CONFIG: file })).toThrow(/disabledMethods/);
  });
});
