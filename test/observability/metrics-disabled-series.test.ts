import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../registry/helpers.js";
import { eventually } from "../support/eventually.js";
import { type FleetProxy, startFleetProxy, stopFleetProxy } from "../support/fleet.js";
import { TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { parseExposition } from "../support/prometheus-text.js";

// docs/configuration.md's `metrics.enabled` row names the gateway's series `GET /metrics` still serves with
// `metrics: { enabled: false }`. An operator who turns the data plane's series off on a proxy with workers
// reads that row to know what the scrape and the alerts still get (a newcomer audit): every gateway_*
// series the scrape serves must be one the row names.

/** The series the row names, read from the doc as an operator reads it. */
function documentedSeries(): Set<string> {
  const doc = readFileSync(join(ROOT, "docs/configuration.md"), "utf8");
  const row = doc.split("\n").find((line) => line.startsWith("| `metrics.enabled`")) ?? "";
  return new Set(row.match(/gateway_[a-z_]+/g) ?? []);
}

describe("metrics.enabled: false on a proxy with workers, as docs/configuration.md says", () => {
  let node: LoopbackNode;
  let proxy: FleetProxy | undefined;
  let dir: string;
  const scrape = async () => {
    const r = await request(`http://127.0.0.1:${proxy?.operatorPort}/metrics`, { headersTimeout: 10_000 });
    return parseExposition(await r.body.text());
  };

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    dir = mkdtempSync(join(tmpdir(), "gateway-metrics-off-"));
    const config = join(dir, "deployment.yaml");
    writeFileSync(
      config,
      [
        "domain: gw.test",
        "listen: { host: 127.0.0.1, port: 0 }",
        "operator: { listen: { host: 127.0.0.1, port: 0 } }",
        "workers: 2",
        "metrics: { enabled: false }",
        `upstreams: { eth: ["${node.url}"] }`,
        "health: { probeIntervalMs: 0 }",
        "log: { level: info, access: false }",
        `keys: [{ key: ${TEST_KEYS[0]?.key}, networks: "*" }]`,
      ].join("\n"),
    );
    proxy = await startFleetProxy(config);
  });
  afterAll(async () => {
    if (proxy !== undefined) await stopFleetProxy(proxy);
    await node?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("serves no gateway_* series the row does not name", async () => {
    // both workers up, so that the primary's own series are all there
    await eventually(
      async () => (await scrape()).samples.find((s) => s.name === "gateway_workers_alive")?.value === 2,
      30_000,
      "both workers running",
    );
    const served = new Set(
      (await scrape()).samples
        .map((s) => s.name.replace(/_(bucket|sum|count)$/, ""))
        .filter((name) => name.startsWith("gateway_")),
    );
    const documented = documentedSeries();
    expect(documented).toContain("gateway_build_info");
    expect([...served].filter((name) => !documented.has(name)).sort()).toEqual([]);
  });
});
