import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ROOT } from "../registry/helpers.js";
import { eventually } from "../support/eventually.js";
import { type FleetProxy, startFleetProxy, stopFleetProxy } from "../support/fleet.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { skipUnlessCi } from "../support/services.js";

// GatewayWorkersMissing (deploy/prometheus/gateway-rules.yml) fed a live cluster's series while one of its
// workers is stopped (SIGSTOP: what a worker stuck in a loop or a long pause looks like to the primary). The
// primary says so on /readyz (docs/operations.md, "With several workers"), and the connections it hands that
// worker hang; the alert must name the instance as running fewer workers than configured.

const RULES = join(ROOT, "deploy/prometheus/gateway-rules.yml");
const promtool = skipUnlessCi(
  existsSync("/usr/bin/promtool")
    ? []
    : [
        {
          suites: "worker alert",
          reason: "promtool is missing (bash scripts/system-packages.sh installs prometheus)",
        },
      ],
);

describe.skipIf(promtool.skip)("the workers alert against a live cluster with a stopped worker", () => {
  let node: LoopbackNode;
  let proxy: FleetProxy;
  let dir = "";
  let stopped: number | undefined;
  let scrape = "";

  const operator = async (path: string) => {
    const answer = await request(`http://127.0.0.1:${proxy.operatorPort}${path}`);
    return { status: answer.statusCode, text: await answer.body.text() };
  };

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1" }));
    dir = mkdtempSync(join(tmpdir(), "worker-silent-"));
    const config = join(dir, "gateway.yaml");
    writeFileSync(
      config,
      [
        "domain: gw.test",
        "listen: { host: 127.0.0.1, port: 0 }",
        "operator: { listen: { host: 127.0.0.1, port: 0 } }",
        `upstreams: { eth: ["${node.url}"] }`,
        "workers: 2",
        "log: { level: info, access: false }",
      ].join("\n"),
    );
    proxy = await startFleetProxy(config);
    await eventually(async () => (await operator("/readyz")).status === 200, 10_000, "both workers ready");
    const pids = (
      JSON.parse((await operator("/upstreams")).text) as { processes: { pid: number }[] }
    ).processes.map((p) => p.pid);
    expect(pids).toHaveLength(2);
    // a worker of the proxy this test started
    stopped = pids[1] as number;
    process.kill(stopped, "SIGSTOP");
    await eventually(
      async () => (await operator("/readyz")).text.includes("did not answer"),
      10_000,
      "the primary's readiness naming the silent worker",
    );
    scrape = (await operator("/metrics")).text;
  }, 60_000);
  afterAll(async () => {
    if (stopped !== undefined) process.kill(stopped, "SIGCONT");
    if (proxy !== undefined) await stopFleetProxy(proxy);
    await node?.close();
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  it("fires GatewayWorkersMissing for the instance", () => {
    // the cluster's own series as a scrape of the proxy "p1" reads them, held 10 minutes
    const series = scrape
      .split("\n")
      .filter((line) => /^gateway_workers?_[a-z_]+ /.test(line))
      .map((line) => {
        const [name, value] = line.split(" ") as [string, string];
        return `      - series: '${name}{job="gateway",instance="p1"}'\n        values: "${value}x10"`;
      });
    const alert = (
      parse(readFileSync(RULES, "utf8")) as { groups: { rules: { alert?: string; expr: string }[] }[] }
    ).groups
      .flatMap((g) => g.rules)
      .find((r) => r.alert === "GatewayWorkersMissing");
    const tests = join(dir, "workers.test.yml");
    writeFileSync(
      tests,
      [
        "tests:",
        "  - interval: 1m",
        "    input_series:",
        ...series,
        "    promql_expr_test:",
        `      - expr: ${JSON.stringify(alert?.expr)}`,
        "        eval_time: 5m",
        "        exp_samples:",
        `          - labels: '{job="gateway",instance="p1"}'`,
        "            value: 1",
      ].join("\n"),
    );
    const tested = spawnSync("promtool", ["test", "rules", tests], { encoding: "utf8" });
    expect(tested.stdout + tested.stderr).toContain("SUCCESS");
    expect(tested.status).toBe(0);
  });
});
