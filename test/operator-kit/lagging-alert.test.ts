import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { ROOT } from "../registry/helpers.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import { skipUnlessCi } from "../support/services.js";

// GatewayUpstreamLagging (deploy/prometheus/gateway-rules.yml) fed the series a live gateway shows for
// real nodes (anvil) a few blocks apart: it names the node the gateway took out of rotation as lagging, by
// the label's own lag threshold (health.maxLagBlocks, or maxLagSeconds in the network's blocks), and not a
// node of a fast chain a few blocks behind, which is within that threshold and serves.

const RULES = join(ROOT, "deploy/prometheus/gateway-rules.yml");
const promtool = skipUnlessCi(
  existsSync("/usr/bin/promtool")
    ? []
    : [
        {
          suites: "lagging alert",
          reason: "promtool is missing (bash scripts/system-packages.sh installs prometheus)",
        },
      ],
);

describe.skipIf(promtool.skip)("the lagging alert against a live gateway's series", () => {
  const nodes: Anvil[] = [];
  let gw: RunningGateway;
  let dir = "";

  beforeAll(async () => {
    // eth (12 s blocks): out of rotation past 3 blocks; bsc (0.75 s blocks): past 40
    const [ethA, ethB, bscA, bscB] = await Promise.all([
      startAnvil({ chainId: 1 }),
      startAnvil({ chainId: 1 }),
      startAnvil({ chainId: 56 }),
      startAnvil({ chainId: 56 }),
    ]);
    nodes.push(ethA as Anvil, ethB as Anvil, bscA as Anvil, bscB as Anvil);
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: (ethA as Anvil).url, name: "eth-a" },
          { url: (ethB as Anvil).url, name: "eth-b" },
        ],
        bsc: [
          { url: (bscA as Anvil).url, name: "bsc-a" },
          { url: (bscB as Anvil).url, name: "bsc-b" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await eventually(
      async () => (await gw.metric("gateway_upstream_state", { state: "healthy" })) === 4,
      10_000,
      "the four nodes healthy",
    );
    await (ethA as Anvil).rpc("anvil_mine", ["0x4"]);
    await (bscA as Anvil).rpc("anvil_mine", ["0x8"]);
    await eventually(
      async () =>
        (await gw.metric("gateway_upstream_state", { upstream: "eth-b", state: "lagging" })) === 1 &&
        (await gw.metric("gateway_upstream_lag_blocks", { upstream: "bsc-b" })) === 8,
      10_000,
      "eth-b lagging, bsc-b 8 blocks behind",
    );
    dir = mkdtempSync(join(tmpdir(), "lagging-alert-"));
  }, 60_000);
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((node) => node.stop()));
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  it("selects the node the gateway judges lagging, and not one within its label's threshold", async () => {
    expect(await gw.metric("gateway_upstream_state", { upstream: "eth-b", state: "lagging" })).toBe(1);
    expect(await gw.metric("gateway_upstream_lag_blocks", { upstream: "eth-b" })).toBe(4);
    expect(await gw.metric("gateway_upstream_state", { upstream: "bsc-b", state: "healthy" })).toBe(1);
    // the live series of both labels' nodes, as a scrape of the proxy "p1" reads them, held 10 minutes
    const series: string[] = [];
    for (const name of ["gateway_upstream_state", "gateway_upstream_lag_blocks"]) {
      const metric = gw.gateway.metrics?.all.find((m) => m.name === name);
      for (const { labels, value } of (await metric?.get())?.values ?? []) {
        const all = { ...labels, job: "gateway", instance: "p1" };
        const selector = Object.entries(all)
          .map(([label, v]) => `${label}="${v}"`)
          .join(",");
        series.push(`      - series: '${name}{${selector}}'\n        values: "${value}x10"`);
      }
    }
    const alert = (
      parse(readFileSync(RULES, "utf8")) as { groups: { rules: { alert?: string; expr: string }[] }[] }
    ).groups
      .flatMap((g) => g.rules)
      .find((r) => r.alert === "GatewayUpstreamLagging");
    const tests = join(dir, "lagging.test.yml");
    writeFileSync(
      tests,
      [
        "tests:",
        "  - interval: 1m",
        "    input_series:",
        ...series,
        "    promql_expr_test:",
        `      - expr: ${JSON.stringify(alert?.expr)}`,
        "        eval_time: 6m",
        "        exp_samples:",
        `          - labels: '{label="eth",upstream="eth-b"}'`,
        "            value: 4",
      ].join("\n"),
    );
    const tested = spawnSync("promtool", ["test", "rules", tests], { encoding: "utf8" });
    expect(tested.stdout + tested.stderr).toContain("SUCCESS");
    expect(tested.status).toBe(0);
  });
});
