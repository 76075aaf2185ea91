// `npm run bench [-- --quick]`: the gateway against direct access, the Node floor and the proxies a Node
// user would pick instead, in one run on one machine. bench/README.md explains targets and scenarios.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { build } from "esbuild";
import { stringify } from "yaml";
import { packageRoot } from "../src/package-root.js";
import { type CpuBudget, createCpuBudget } from "./cpu-budget.js";
import { BENCH_DOMAIN, BENCH_KEY, benchConfig } from "./gateway-config.js";
import { measure, type Sample, type Target, type Workload } from "./load.js";
import { freePort, type Running, start } from "./processes.js";
import { type Check, type FanoutRow, markdown, type Row } from "./report.js";
import { median, pairedRatio } from "./stats.js";
import { buildSyntheticRegistry, SYNTHETIC_NETWORKS } from "./synthetic-registry.js";
import { wsFanout } from "./ws-load.js";

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    // while working on one thing: only scenarios whose name contains this, and no routing or fan-out
    only: { type: "string" },
  },
});
const quick = args.quick;
const ROUNDS = 3;
// autocannon runs whole seconds (a duration of 0.5 ran for one), so every round is a whole number of them.
const SECONDS = quick ? 1 : 2;
// The scenarios the targets are checked on get more, shorter rounds: on this VM one round's ratio to the
// floor ranged from 0.64 to 1.26 within a run. Even counts, as many forward rounds as reverse ones. After
// the rounds of every target, the checked trio (floor, gateway, workers) runs more rounds on its own: the
// checks get 16 pairs in the time 10 rounds of all six targets took.
const CHECKED_ROUNDS = quick ? 2 : 6;
const CHECKED_PAIR_ROUNDS = quick ? 0 : 10;
const CHECKED_SECONDS = quick ? 1 : 2;
const WARMUP_SECONDS = 1;
const root = packageRoot();
const tsx = (file: string) => ["--import", "tsx", join("bench", file)];
const CACHE = join("node_modules", ".cache", "gateway-bench");
/** Targets run as plain JavaScript, like the gateway's own bundle, so no loader sits in their CPU or RSS. */
const compiled = (file: string) => [join(CACHE, file.replace(/\.ts$/, ".mjs"))];

async function compileTargets(): Promise<void> {
  await build({
    entryPoints: ["upstream.ts", "targets/floor.ts", "targets/http-proxy.ts", "targets/fastify-proxy.ts"].map(
      (file) => join(root, "bench", file),
    ),
    outbase: join(root, "bench"),
    outdir: join(root, CACHE),
    outExtension: { ".js": ".mjs" },
    bundle: true,
    packages: "external",
    platform: "node",
    target: "node20",
    format: "esm",
    logLevel: "warning",
  });
}

const rpc = (method: string, id = 1) => JSON.stringify({ jsonrpc: "2.0", id, method, params: [] });
const SMALL: Omit<Workload, "name" | "connections"> = {
  method: "POST",
  path: "/",
  body: rpc("eth_blockNumber"),
  label: "eth",
};
// The 1 MB scenario runs first: a process keeps the heap it grew, so each target's peak RSS there is its
// own and not what earlier scenarios left behind.
const SCENARIOS: readonly Workload[] = [
  { name: "1 MB response, 200 conns", connections: 200, ...SMALL, body: rpc("eth_getLogs") },
  { name: "eth_blockNumber, 50 conns", connections: 50, ...SMALL },
  { name: "eth_blockNumber, 200 conns", connections: 200, ...SMALL },
  {
    name: "batch of 10, 50 conns",
    connections: 50,
    ...SMALL,
    body: `[${Array.from({ length: 10 }, (_, i) => rpc("eth_blockNumber", i + 1)).join(",")}]`,
  },
  { name: "REST GET, 50 conns", connections: 50, method: "GET", path: "/v2/status", label: "algo" },
];
const QUICK_SCENARIOS = new Set(["eth_blockNumber, 50 conns"]);

const began = Date.now();
const progress = (done: string) =>
  process.stderr.write(`${((Date.now() - began) / 1000).toFixed(0)} s: ${done}\n`);

const running: Running[] = [];
process.once("exit", () => {
  for (const r of running) r.child.kill("SIGKILL");
});

async function launch(name: string, entry: string[], env: Record<string, string>, gateway: boolean) {
  const port = await freePort();
  const target = { ...(await start(name, entry, { ...env, BENCH_PORT: String(port) }, port, root)), gateway };
  running.push(target);
  return target;
}

/**
 * Every target runs in turn within a round, so drift on a shared machine hits all alike, and every other
 * round runs them in reverse (A B C, C B A, …), so no target always follows the same one.
 */
async function compare(
  scenario: Workload,
  targets: readonly Target[],
  {
    rounds = ROUNDS,
    seconds = SECONDS,
    upstream,
    focus = [],
    focusRounds = 0,
  }: {
    rounds?: number;
    seconds?: number;
    upstream?: Running;
    /** Targets that then run `focusRounds` more rounds on their own, in the same alternating orders. */
    focus?: readonly Target[];
    focusRounds?: number;
  } = {},
): Promise<Map<string, Sample[]>> {
  const samples = new Map<string, Sample[]>(targets.map((t) => [t.name, []]));
  for (const target of targets) await measure(target, scenario, WARMUP_SECONDS);
  for (let round = 0; round < rounds + focusRounds; round++) {
    const these = round < rounds ? targets : focus;
    for (const target of round % 2 === 0 ? these : [...these].reverse()) {
      const node = target === upstream ? undefined : upstream;
      samples.get(target.name)?.push(await measure(target, scenario, seconds, node));
    }
  }
  return samples;
}

function summarise(scenario: string, samples: Map<string, Sample[]>, floor: string | undefined): Row[] {
  const floorSamples = floor === undefined ? undefined : samples.get(floor);
  return [...samples].map(([target, list]) => {
    const rps = median(list.map((s) => s.rps));
    const cpuMicros = median(list.map((s) => s.cpuMicros));
    const upstreamMicros = list.map((s) => s.upstreamMicros).filter((m) => m !== undefined);
    return {
      scenario,
      target,
      rps,
      p50Ms: median(list.map((s) => s.p50)),
      p99Ms: median(list.map((s) => s.p99)),
      rssMB: median(list.map((s) => s.rssBytes)) / 2 ** 20,
      cpuMicros,
      clientMicros: median(list.map((s) => s.clientMicros)),
      upstreamMicros: upstreamMicros.length > 0 ? median(upstreamMicros) : undefined,
      floorRatio:
        floorSamples &&
        pairedRatio(
          list.map((s) => s.rps),
          floorSamples.map((s) => s.rps),
        ),
      floorCpuRatio:
        floorSamples &&
        pairedRatio(
          list.map((s) => s.cpuMicros),
          floorSamples.map((s) => s.cpuMicros),
        ),
      failures: list.reduce((sum, s) => sum + s.failures, 0),
      rounds: list.length,
      roundRps: list.map((s) => s.rps),
    };
  });
}

async function main(): Promise<void> {
  execFileSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], { cwd: root, stdio: "inherit" });
  await compileTargets();
  progress("built");

  const wsPort = await freePort();
  const node = await launch("direct", compiled("upstream.ts"), { BENCH_WS_PORT: String(wsPort) }, false);
  const upstream = `http://127.0.0.1:${node.port}`;
  const upstreamWs = `ws://127.0.0.1:${wsPort}`;

  const dir = mkdtempSync(join(tmpdir(), "gateway-bench-"));
  const configFile = join(dir, "gateway.yaml");
  writeFileSync(
    configFile,
    stringify(benchConfig({ http: upstream, ws: upstreamWs, labels: ["eth", "algo"] })),
  );
  // As `npm start` runs it: the built binary, with the deployment file in GATEWAY_CONFIG.
  const gatewayEntry = ["dist/gateway.js"];
  const gatewayEnv = (workers: number) => ({ GATEWAY_CONFIG: configFile, GATEWAY_WORKERS: String(workers) });
  const gateway = await launchGateway("gateway", gatewayEntry, gatewayEnv(1));
  const cluster = await launchGateway(
    `gateway, ${cpus().length} workers`,
    gatewayEntry,
    gatewayEnv(cpus().length),
  );
  const proxied = { BENCH_UPSTREAM: upstream };
  const httpProxy = await launch("http-proxy", compiled("targets/http-proxy.ts"), proxied, false);
  const fastify = await launch("@fastify/http-proxy", compiled("targets/fastify-proxy.ts"), proxied, false);
  const floor = await launch("Node floor", compiled("targets/floor.ts"), proxied, false);
  progress("targets listening");
  // The floor next to the gateway, and the workers next to it: the checked pairs run seconds apart.
  const targets = [node, floor, gateway, cluster, httpProxy, fastify];

  const rows: Row[] = [];
  for (const scenario of SCENARIOS) {
    if (quick && !QUICK_SCENARIOS.has(scenario.name)) continue;
    if (args.only !== undefined && !scenario.name.includes(args.only)) continue;
    const checked = scenario.name.startsWith("eth_blockNumber");
    const run = checked
      ? {
          rounds: CHECKED_ROUNDS,
          seconds: CHECKED_SECONDS,
          focus: [floor, gateway, cluster],
          focusRounds: CHECKED_PAIR_ROUNDS,
        }
      : {};
    rows.push(
      ...summarise(scenario.name, await compare(scenario, targets, { ...run, upstream: node }), floor.name),
    );
    progress(scenario.name);
  }

  // The HTTP targets are done: stopped, they leave the cores to what follows.
  await Promise.all([gateway, cluster, httpProxy, fastify, floor].map((target) => target.stop()));
  const fanout: FanoutRow[] = [];
  const notes: string[] = [];
  if (args.only === undefined) {
    const scaling = await scalingAtBudget(gatewayEntry, gatewayEnv, node);
    if (scaling === undefined) notes.push(NO_BUDGET);
    else rows.push(...scaling);
    progress("scaling at a CPU budget");
    rows.push(...(await routingCost(dir, upstream, upstreamWs)));
    progress("routing cost");
    // A fresh gateway, so the memory per connection is not blurred by heap that earlier load left behind;
    // as many workers as the open-file limit needs to hold every connection (two sockets each).
    const connections = quick ? 500 : 10_000;
    const workers = Math.min(WORKERS, Math.ceil((2 * connections) / (openFileLimit() - 1000)));
    const holder = await launchGateway(
      workers === 1 ? "gateway" : `gateway, ${workers} workers`,
      gatewayEntry,
      gatewayEnv(workers),
    );
    fanout.push(...(await webSocketFanout(wsPort, upstreamWs, holder, connections)));
    progress("WebSocket fan-out");
  }

  const checks = evaluate(rows, fanout, gateway.name, cluster.name);
  notes.unshift(...ceilings(rows, cluster.name));
  const table = markdown(rows, fanout, checks, notes);
  const seconds = Math.round((Date.now() - began) / 1000);
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GB, Node ${process.version}`;
  process.stdout.write(`\n${table}\n\n${quick ? "quick" : "full"} run, ${seconds} s, ${machine}\n`);
  const results = join(root, "bench", "results");
  mkdirSync(results, { recursive: true });
  const file = join(
    results,
    `${new Date().toISOString().replace(/[:.]/g, "-")}${quick ? "-quick" : ""}.json`,
  );
  writeFileSync(
    file,
    `${JSON.stringify({ quick, seconds, machine, rounds: ROUNDS, rows, fanout, checks, notes }, null, 2)}\n`,
  );
  process.stdout.write(`written: ${file}\n`);
  await Promise.all(running.map((r) => r.stop()));
}

/**
 * What the machine allows the multi-process gateway: the load generator and the node share its cores,
 * so throughput cannot pass cores / (CPU per request of gateway + node + load generator).
 */
function ceilings(rows: readonly Row[], cluster: string): string[] {
  const cores = cpus().length;
  return rows
    .filter((r) => r.target === cluster && r.upstreamMicros !== undefined)
    .map((r) => {
      const ceiling = coresAllow(r);
      return `${r.scenario}: ${cluster} at ${Math.round(r.rps)} req/s is ${((r.rps / ceiling) * 100).toFixed(0)}% of the ${Math.round(ceiling)} req/s that ${cores} cores allow (${cores} × 10⁶ µs / (gateway ${r.cpuMicros.toFixed(0)} + node ${(r.upstreamMicros ?? 0).toFixed(0)} + load generator ${r.clientMicros.toFixed(0)} µs per request))`;
    });
}

/** Requests per second the machine's cores allow a target, with the node and the load generator on them too. */
function coresAllow(row: Row): number {
  return (cpus().length * 1e6) / (row.cpuMicros + (row.upstreamMicros ?? 0) + row.clientMicros);
}

// Half a core per process: the load generator and the node keep enough of the two cores to drive a
// cluster that uses twice that, so what limits each target is its own budget.
const BUDGET_PER_PROCESS = 0.5;
const WORKERS = cpus().length;
const ONE_BUDGETED = `gateway, ${BUDGET_PER_PROCESS} CPU`;
const MANY_BUDGETED = `gateway, ${WORKERS} workers, ${WORKERS} × ${BUDGET_PER_PROCESS} CPU`;
const NO_BUDGET =
  "scaling at a CPU budget skipped: no writable cgroup with a CPU controller (run the bench as root, or in a delegated cgroup)";

/**
 * The multi-process mode's scaling as a machine with cores to spare would show it: one process held to
 * half a core and the cluster held to half a core per worker (Linux cgroup CPU quotas), alternating. On
 * two cores shared with the load generator and the node, the unbudgeted comparison measures the machine
 * (see `ceilings`); this one measures what a second worker adds. Undefined where no quota can be set.
 */
async function scalingAtBudget(
  entry: string[],
  env: (workers: number) => Record<string, string>,
  upstream: Running,
): Promise<Row[] | undefined> {
  const one = createCpuBudget("gateway-bench-one", BUDGET_PER_PROCESS);
  const many = createCpuBudget("gateway-bench-many", BUDGET_PER_PROCESS * WORKERS);
  try {
    if (one === undefined || many === undefined) return undefined;
    const single = await launchGateway(ONE_BUDGETED, entry, env(1), one);
    const cluster = await launchGateway(MANY_BUDGETED, entry, env(WORKERS), many);
    const small = SCENARIOS.find((scenario) => scenario.name === "eth_blockNumber, 50 conns") as Workload;
    // Warmed up unbudgeted, as the other targets were (their compiled hot paths are not what is compared).
    for (const budget of [one, many]) budget.enforce(false);
    for (const target of [single, cluster]) await measure(target, small, CHECKED_SECONDS);
    for (const budget of [one, many]) budget.enforce(true);
    const samples = await compare(small, [single, cluster], {
      rounds: quick ? 2 : 6,
      seconds: CHECKED_SECONDS,
      upstream,
    });
    await Promise.all([single.stop(), cluster.stop()]);
    return summarise("CPU budget, eth_blockNumber, 50 conns", samples, undefined);
  } finally {
    await Promise.all([one?.remove(), many?.remove()]);
  }
}

/** This process's hard limit on open files (RLIMIT_NOFILE), which the processes it starts inherit. */
function openFileLimit(): number {
  const line = /^Max open files\s+\S+\s+(\S+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
  if (line?.[1] === "unlimited") return Number.POSITIVE_INFINITY;
  const limit = Number(line?.[1]);
  return Number.isFinite(limit) ? limit : 1024;
}

const REAL_REGISTRY = "gateway, real registry";
const BIG_REGISTRY = `gateway, +${SYNTHETIC_NETWORKS} networks`;

/** The same in-process gateway with the committed table and with a 1,000-network one, alternating. */
async function routingCost(dir: string, upstream: string, upstreamWs: string): Promise<Row[]> {
  const synthetic = buildSyntheticRegistry(root, join(dir, "synthetic"));
  progress(`codegen of the ${SYNTHETIC_NETWORKS}-network registry`);
  const inproc = (label: string, endpoints?: string) => ({
    BENCH_UPSTREAM: upstream,
    BENCH_UPSTREAM_WS: upstreamWs,
    BENCH_LABEL: label,
    ...(endpoints === undefined ? {} : { BENCH_ENDPOINTS: endpoints }),
  });
  const entry = tsx("targets/gateway-inproc.ts");
  const real = await launch(REAL_REGISTRY, entry, inproc("eth"), true);
  const big = await launch(BIG_REGISTRY, entry, inproc(synthetic.label, synthetic.endpoints), true);
  progress("in-process gateways listening");
  const small = SCENARIOS.find((scenario) => scenario.name === "eth_blockNumber, 50 conns") as Workload;
  // Two targets only, and a 5% question: more, shorter rounds (as many in each order), so that one noisy
  // round cannot move a direction's median; with 4 per direction one round at half speed read 93%.
  const samples = await compare(small, [real, { ...big, label: synthetic.label }], {
    rounds: quick ? 2 : 12,
    seconds: CHECKED_SECONDS,
  });
  await Promise.all([real.stop(), big.stop()]);
  return summarise("routing, eth_blockNumber, 50 conns", samples, undefined);
}

async function webSocketFanout(
  wsPort: number,
  upstreamWs: string,
  gateway: Target,
  connections: number,
): Promise<FanoutRow[]> {
  const pushes = quick ? 3 : 10;
  const pushUrl = `http://127.0.0.1:${wsPort}/push`;
  const direct = await wsFanout({ url: upstreamWs, connections, pushes, pushUrl });
  const relayed = await wsFanout({
    url: `ws://127.0.0.1:${gateway.port}/${BENCH_KEY}`,
    host: `eth.${BENCH_DOMAIN}`,
    connections,
    pushes,
    pushUrl,
    rss: () => gateway.rss(),
  });
  return [
    { target: "direct", ...direct },
    { target: gateway.name, ...relayed },
  ];
}

async function launchGateway(
  name: string,
  entry: string[],
  env: Record<string, string>,
  budget?: CpuBudget,
): Promise<Target> {
  const port = await freePort();
  const target = {
    ...(await start(name, entry, { ...env, GATEWAY_PORT: String(port) }, port, root, budget?.wrap)),
    gateway: true,
  };
  running.push(target);
  return target;
}

function evaluate(
  rows: readonly Row[],
  fanout: readonly FanoutRow[],
  gateway: string,
  cluster: string,
): Check[] {
  const find = (scenario: string, target: string) =>
    rows.find((r) => r.scenario.startsWith(scenario) && r.target === target);
  const checks: Check[] = [];
  for (const scenario of ["eth_blockNumber, 50 conns", "eth_blockNumber, 200 conns"]) {
    const one = find(scenario, gateway);
    const many = find(scenario, cluster);
    if (one?.floorRatio !== undefined)
      checks.push({
        name: `${scenario}: one process ≥ 0.9× the Node floor`,
        pass: one.floorRatio >= 0.9,
        measured: `${one.floorRatio.toFixed(3)}×`,
      });
    if (one && many) {
      const scaling = pairedRatio(many.roundRps, one.roundRps);
      checks.push({
        name: `${scenario}: ${cluster} ≥ 1.4× one process`,
        pass: scaling >= 1.4,
        // What the machine itself allows, so that a MISS here says whether the workers or the cores fell short.
        measured: `${scaling.toFixed(3)}× (these cores allow at most ${(coresAllow(many) / one.rps).toFixed(2)}×)`,
      });
    }
  }
  const budgeted = find("CPU budget", ONE_BUDGETED);
  const budgetedCluster = find("CPU budget", MANY_BUDGETED);
  if (budgeted && budgetedCluster) {
    const scaling = pairedRatio(budgetedCluster.roundRps, budgeted.roundRps);
    checks.push({
      name: `${MANY_BUDGETED} ≥ 1.4× one process with ${BUDGET_PER_PROCESS} CPU`,
      pass: scaling >= 1.4,
      measured: `${scaling.toFixed(3)}×`,
    });
  }
  const large = find("1 MB response", gateway);
  if (large)
    checks.push({
      name: "1 MB responses at 200 conns: gateway peak RSS < 150 MB",
      pass: large.rssMB < 150,
      measured: `${large.rssMB.toFixed(0)} MB`,
    });
  const small = find("routing", REAL_REGISTRY);
  const synthetic = find("routing", BIG_REGISTRY);
  if (small && synthetic) {
    const ratio = pairedRatio(synthetic.roundRps, small.roundRps);
    checks.push({
      name: `${SYNTHETIC_NETWORKS}-network registry within 5% of the real one`,
      pass: ratio >= 0.95,
      measured: `${(ratio * 100).toFixed(1)}%`,
    });
  }
  const ws = fanout.find((f) => f.target !== "direct");
  // What one more idle connection costs: the growth from N/2 to N. The growth over all N also carries each
  // process's heaps growing for the burst of handshakes, once per worker, and is printed beside it.
  if (ws?.marginalBytesPerConnection !== undefined && ws.bytesPerConnection !== undefined)
    checks.push({
      name: `idle WebSocket connection ≤ 18 KB of gateway RSS, from ${ws.connections / 2} to ${ws.connections} connections`,
      pass: ws.marginalBytesPerConnection <= 18 * 1024,
      measured: `${(ws.marginalBytesPerConnection / 1024).toFixed(1)} KB each (${ws.target}; over all ${ws.connections}, with the heaps' growth, ${(ws.bytesPerConnection / 1024).toFixed(1)} KB each)`,
    });
  return checks;
}

await main();
