import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { freePort } from "../../src/dev/free-port.js";
import { ROOT } from "../registry/helpers.js";
import { eventually } from "../support/eventually.js";
import { type FleetProxy, startFleetProxy, stopFleetProxy } from "../support/fleet.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { needServices, SHARED_REDIS_URL, skipUnlessCi } from "../support/services.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// The operator's kit (deploy/, docs/operations.md): the alerting and recording rules pass promtool's check and
// their unit tests, every series the rules and the Grafana dashboard name is in a live scrape of the gateway
// after a workload (a renamed or dropped metric fails here), and a real Prometheus scraping a test gateway
// counts the workload's requests.

const RULES = join(ROOT, "deploy/prometheus/gateway-rules.yml");
const RULE_TESTS = join(ROOT, "deploy/prometheus/gateway-rules.test.yml");
const DASHBOARD = join(ROOT, "deploy/grafana/gateway-dashboard.json");
const promtool = skipUnlessCi(
  existsSync("/usr/bin/promtool")
    ? []
    : [
        {
          suites: "operator kit",
          reason: "promtool is missing (bash scripts/system-packages.sh installs prometheus)",
        },
      ],
);
const redis = await needServices("redis");

/** Every series name a PromQL expression reads: the gateway's, Node's and the process's, not a recorded one. */
function seriesIn(expr: string): string[] {
  return [...expr.matchAll(/\b((?:gateway|nodejs|process)_[a-z0-9_]+)\b(?!:)/g)].map((m) => m[1] as string);
}

/** The expressions of the rules file and of the dashboard's panels. */
function expressions(): { rules: string[]; dashboard: string[] } {
  const groups = (parse(readFileSync(RULES, "utf8")) as { groups: { rules: { expr: string }[] }[] }).groups;
  const panels = (
    JSON.parse(readFileSync(DASHBOARD, "utf8")) as { panels: { targets?: { expr: string }[] }[] }
  ).panels;
  return {
    rules: groups.flatMap((g) => g.rules.map((r) => r.expr)),
    dashboard: panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
  };
}

describe.skipIf(promtool.skip)("the Prometheus rules", () => {
  it("pass promtool check rules", () => {
    const checked = spawnSync("promtool", ["check", "rules", RULES], { encoding: "utf8" });
    expect(checked.status, checked.stdout + checked.stderr).toBe(0);
  });

  it("pass their unit tests: each alert fires when it should and stays silent beside it", () => {
    const tested = spawnSync("promtool", ["test", "rules", RULE_TESTS], { encoding: "utf8" });
    expect(tested.status, tested.stdout + tested.stderr).toBe(0);
    // every alert of the file has a test, and a runbook line
    const alerts = (
      parse(readFileSync(RULES, "utf8")) as {
        groups: { rules: { alert?: string; annotations?: { runbook?: string } }[] }[];
      }
    ).groups
      .flatMap((g) => g.rules)
      .filter((r) => r.alert !== undefined);
    const tests = readFileSync(RULE_TESTS, "utf8");
    for (const alert of alerts) {
      expect(tests, alert.alert).toContain(`alertname: ${alert.alert}`);
      expect(alert.annotations?.runbook?.length ?? 0, alert.alert).toBeGreaterThan(20);
    }
  });
});

describe.skipIf(promtool.skip || redis.skip)("the kit against a live gateway", () => {
  // keys of this run's own: their rate buckets and quota counters live on in the shared Redis
  const run = randomBytes(3).toString("hex");
  // their first 8 characters differ, whatever the run's hex (all digits once made two of them one id)
  const KEY = `FNk${run}itKey000000000000000000`;
  const SLOW = `FNs${run}itSlow00000000000000000`;
  const METERED = `FNm${run}itMetered000000000000000`;
  let node: LoopbackNode;
  let ws: LoopbackWsNode;
  let proxy: FleetProxy;
  let prometheus: ReturnType<typeof spawn> | undefined;
  let prometheusPort = 0;
  let dir = "";
  let restore: () => void = () => {};
  let scrape = "";
  let socket: Client | undefined;

  const call = async (key: string, method: string) => {
    const answer = await request(`http://127.0.0.1:${proxy.port}/${key}`, {
      method: "POST",
      headers: { host: "eth.gw.test", "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: [] }),
    });
    await answer.body.dump();
    return answer.statusCode;
  };
  const query = async (promql: string): Promise<number | undefined> => {
    const answer = await request(
      `http://127.0.0.1:${prometheusPort}/api/v1/query?query=${encodeURIComponent(promql)}`,
    );
    const json = (await answer.body.json()) as { data?: { result?: { value: [number, string] }[] } };
    const value = json.data?.result?.[0]?.value[1];
    return value === undefined ? undefined : Number(value);
  };

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1" }));
    ws = await startLoopbackWsNode({
      results: { eth_blockNumber: "0x10" },
      subscriptions: { eth_subscribe: { notification: "eth_subscription", unsubscribe: "eth_unsubscribe" } },
    });
    restore = resolveTestHosts();
    dir = mkdtempSync(join(tmpdir(), "operator-kit-"));
    const config = join(dir, "gateway.yaml");
    // two workers and Redis: the workers' and the shared limits' series exist as a deployment has them
    writeFileSync(
      config,
      [
        "domain: gw.test",
        "listen: { host: 127.0.0.1, port: 0 }",
        "operator: { listen: { host: 127.0.0.1, port: 0 } }",
        `upstreams: { eth: [{ url: "${node.url}", ws: "${ws.wsUrl}", name: eth-node }] }`,
        "health: { probeIntervalMs: 500 }",
        "workers: 2",
        `sharedLimits: { redis: "${SHARED_REDIS_URL}" }`,
        "log: { level: info, access: false }",
        "plans: { metered: { dailyQuota: 10 } }",
        "keys:",
        `  - { key: ${KEY}, networks: "*", rate: { perSecond: 10000, burst: 10000 } }`,
        `  - { key: ${SLOW}, networks: "*", rate: { perSecond: 0.001, burst: 1 } }`,
        `  - { key: ${METERED}, networks: "*", plan: metered, rate: { perSecond: 10000, burst: 10000 } }`,
      ].join("\n"),
    );
    proxy = await startFleetProxy(config);
    // both workers run (the primary's /readyz asks every configured worker), so both are in the gauge's
    // minimum: the first to listen alone could read shared while the other still counts alone
    await eventually(
      async () => {
        const ready = await request(`http://127.0.0.1:${proxy.operatorPort}/readyz`);
        await ready.body.dump();
        return ready.statusCode === 200;
      },
      10_000,
      "both workers ready",
    );
    // and both count rates and quotas in Redis before the workload (a loaded machine connects slowly). Each
    // worker says so in its log; the gauge alone is not enough, since a worker that has answered no scrape
    // yet is not in its minimum (src/metrics/cluster-metrics.ts)
    const said = (msg: string) => proxy.logs.filter((line) => line.includes(`"msg":"${msg}`)).length;
    await eventually(
      () => said("shared rate limits: Redis reachable") >= 2 && said("shared quotas: Redis reachable") >= 2,
      10_000,
      "both workers count in Redis",
    );
    await eventually(async () => (await proxy.dependencyUp("shared_limits")) === 1, 10_000, "Redis shared");
    // the workload: 20 served, 3 refused as bad input, 5 on a key of one call per 1,000 s (the workers
    // share its bucket through Redis, a lease's credit aside: some are refused), 1 served and 1 over quota
    for (let i = 0; i < 20; i++) expect(await call(KEY, "eth_blockNumber")).toBe(200);
    for (let i = 0; i < 3; i++) expect(await call(KEY, "admin_peers")).toBe(403);
    const slow: number[] = [];
    for (let i = 0; i < 5; i++) slow.push(await call(SLOW, "eth_blockNumber"));
    expect(slow).toContain(429);
    expect(await call(METERED, "eth_blockNumber")).toBe(200);
    expect(await call(METERED, "eth_blockNumber")).toBe(402);
    // a WebSocket with a subscription, open while scraped, whose node connection drops: it moves
    socket = await Client.open(`ws://eth.gw.test:${proxy.port}/${KEY}`);
    expect((await socket.call("eth_subscribe", ["newHeads"])).result).toBeDefined();
    const first = ws.connections.length;
    ws.latest().socket.terminate();
    await eventually(() => ws.openConnections() === 1 && ws.connections.length > first, 5_000, "moved");
    // enough calls for each worker's young generation to be collected: the GC series appear after one
    for (let round = 0; round < 40; round++)
      await Promise.all(Array.from({ length: 50 }, () => call(KEY, "eth_chainId")));
    await eventually(
      async () => {
        const metrics = await request(`http://127.0.0.1:${proxy.operatorPort}/metrics`);
        scrape = await metrics.body.text();
        return (
          scrape.includes("gateway_websocket_moves_total{") &&
          scrape.includes("nodejs_gc_duration_seconds_sum")
        );
      },
      5_000,
      "the move in the scrape",
    );

    prometheusPort = await freePort();
    writeFileSync(
      join(dir, "prometheus.yml"),
      [
        "global: { scrape_interval: 1s, evaluation_interval: 1s }",
        `rule_files: ["${RULES}"]`,
        "scrape_configs:",
        "  - job_name: gateway",
        `    static_configs: [{ targets: ["127.0.0.1:${proxy.operatorPort}"] }]`,
      ].join("\n"),
    );
    prometheus = spawn(
      "prometheus",
      [
        `--config.file=${join(dir, "prometheus.yml")}`,
        `--storage.tsdb.path=${join(dir, "data")}`,
        `--web.listen-address=127.0.0.1:${prometheusPort}`,
        "--log.level=warn",
      ],
      { stdio: "ignore" },
    );
  }, 60_000);
  afterAll(async () => {
    socket?.close();
    restore();
    if (prometheus !== undefined && prometheus.exitCode === null) {
      const exited = new Promise((resolve) => prometheus?.once("exit", resolve));
      prometheus.kill("SIGTERM");
      await exited;
    }
    if (proxy !== undefined) await stopFleetProxy(proxy);
    await Promise.all([node?.close(), ws?.close()]);
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  it("every series the rules and the dashboard name is in a live scrape", () => {
    const live = new Set(
      scrape
        .split("\n")
        .filter((line) => line !== "" && !line.startsWith("#"))
        .map((line) => line.split(/[{ ]/)[0] as string),
    );
    const { rules, dashboard } = expressions();
    const missing = [...new Set([...rules, ...dashboard].flatMap(seriesIn))].filter(
      (name) => !live.has(name),
    );
    expect(missing).toEqual([]);
    expect(dashboard.length).toBeGreaterThan(30);
  });

  it("every label a selector filters on is a label of that series: a filter on a label it lacks matches nothing", () => {
    const labels = new Map<string, Set<string>>();
    for (const line of scrape.split("\n")) {
      const sample = /^([a-z_:][a-z0-9_:]*)\{([^}]*)\}/i.exec(line);
      if (sample === null) continue;
      const names = labels.get(sample[1] as string) ?? new Set<string>();
      for (const pair of (sample[2] as string).matchAll(/([a-z_][a-z0-9_]*)="/gi))
        names.add(pair[1] as string);
      labels.set(sample[1] as string, names);
    }
    const { rules, dashboard } = expressions();
    const wrong: string[] = [];
    for (const expr of [...rules, ...dashboard])
      for (const selector of expr.matchAll(/\b((?:gateway|nodejs|process)_[a-z0-9_]+)\{([^}]*)\}/g)) {
        const name = selector[1] as string;
        // histograms' series carry the family's labels under their own names
        const known = labels.get(name) ?? labels.get(`${name}_bucket`) ?? new Set<string>();
        for (const matcher of (selector[2] as string).matchAll(/([a-z_][a-z0-9_]*)\s*(?:=~|!~|!=|=)/gi)) {
          const label = matcher[1] as string;
          // job and instance are Prometheus' own, added at the scrape
          if (label !== "job" && label !== "instance" && !known.has(label))
            wrong.push(`${name} has no ${label}`);
        }
      }
    expect([...new Set(wrong)]).toEqual([]);
  });

  it("a real Prometheus scrapes it and counts the workload's requests, and loads the rules", async () => {
    await eventually(
      async () => (await query('up{job="gateway"}').catch(() => undefined)) === 1,
      20_000,
      "scraped",
    );
    // 20 + 5 + 2 eth_blockNumber calls over HTTP, summed over the two workers
    await eventually(
      async () => (await query('sum(gateway_requests_total{label="eth",method="eth_blockNumber"})')) === 27,
      10_000,
      "the workload's eth_blockNumber calls",
    );
    expect(await query('sum(gateway_requests_total{label="eth",code="QUOTA_EXCEEDED"})')).toBe(1);
    expect(await query('sum(gateway_requests_total{label="eth",code="METHOD_NOT_FOUND"})')).toBe(3);
    // the rules loaded, and the recording rules produce series
    const rules = await request(`http://127.0.0.1:${prometheusPort}/api/v1/rules`);
    const loaded = (await rules.body.json()) as { data: { groups: { name: string; rules: unknown[] }[] } };
    expect(loaded.data.groups.map((g) => g.name).sort()).toEqual(["gateway-alerts", "gateway-recording"]);
    await eventually(
      async () => (await query('gateway_label:upstreams_in_rotation{label="eth"}')) === 1,
      10_000,
      "the recording rule evaluated",
    );
  });
});
