// The HTTP workloads against every target: the node itself, the Node floor, the gateway in one process and
// in one per core, and the two proxies a Node user would pick instead.
import { cpus } from "node:os";
import { compare, summarise } from "../compare.js";
import { BENCH_LABELS, benchConfig } from "../gateway-config.js";
import { compiled } from "../launcher.js";
import type { Check, Row } from "../report.js";
import type { Scenario } from "../scenario.js";
import { pairedRatio } from "../stats.js";
import { HTTP_WORKLOADS, SMALL_CALL_50 } from "../workloads.js";

/** The workloads the single process and the workers are checked on. */
const CHECKED = ["eth_blockNumber, 50 conns", "eth_blockNumber, 200 conns"];

export const httpScenarios: Scenario = {
  name: "HTTP scenarios",
  async run(bench) {
    const { launcher, node, deployment } = bench;
    // The checked one process runs as the gateway is deployed, with two healthy upstreams behind `eth`:
    // the shared node twice, so the node's work is the floor's and only the choice between two is added.
    const twoUpstreams = launcher.writeDeployment(
      "gateway-two-upstreams",
      benchConfig({ http: node.http, ws: node.ws, labels: BENCH_LABELS, twice: ["eth"] }),
    );
    const gateway = await launcher.startGateway("gateway", { deployment: twoUpstreams });
    const workers = cpus().length;
    const cluster = await launcher.startGateway(`gateway, ${workers} workers`, { deployment, workers });
    const proxied = { BENCH_UPSTREAM: node.http };
    const httpProxy = await launcher.start("http-proxy", compiled("targets/http-proxy.ts"), proxied);
    const fastify = await launcher.start(
      "@fastify/http-proxy",
      compiled("targets/fastify-proxy.ts"),
      proxied,
    );
    const floor = await launcher.start("Node floor", compiled("targets/floor.ts"), proxied);
    bench.progress("targets listening");
    // The floor next to the gateway, and the workers next to it: the checked pairs run seconds apart.
    const targets = [node.target, floor, gateway, cluster, httpProxy, fastify];

    // The workloads the targets are checked on get more rounds: on this VM one round's ratio to the floor
    // ranged from 0.64 to 1.26 within a run. Even counts, as many forward rounds as reverse ones. After the
    // rounds of every target, the checked trio (floor, gateway, workers) runs more rounds on its own: the
    // checks get 16 pairs in the time 10 rounds of all six targets took.
    const checkedRounds = {
      rounds: bench.quick ? 2 : 6,
      focus: [floor, gateway, cluster],
      focusRounds: bench.quick ? 0 : 10,
    };
    const rows: Row[] = [];
    for (const workload of HTTP_WORKLOADS) {
      if (bench.quick && workload !== SMALL_CALL_50) continue;
      if (bench.only !== undefined && !workload.name.includes(bench.only)) continue;
      const more = CHECKED.includes(workload.name) ? checkedRounds : {};
      const samples = await compare(workload, targets, {
        ...more,
        seconds: bench.roundSeconds,
        upstream: node.target,
      });
      rows.push(...summarise(workload.name, samples, floor.name));
      bench.progress(workload.name);
    }
    // Done: stopped, they leave the cores to what follows.
    await Promise.all([gateway, cluster, httpProxy, fastify, floor].map((target) => target.stop()));
    return { rows, checks: judge(rows, gateway.name, cluster.name), notes: ceilings(rows, cluster.name) };
  },
};

function judge(rows: readonly Row[], gateway: string, cluster: string): Check[] {
  const find = (workload: string, target: string) =>
    rows.find((r) => r.scenario === workload && r.target === target);
  const checks: Check[] = [];
  for (const workload of CHECKED) {
    const one = find(workload, gateway);
    const many = find(workload, cluster);
    if (one?.floorRatio !== undefined)
      checks.push({
        name: `${workload}: one process ≥ 0.9× the Node floor`,
        pass: one.floorRatio >= 0.9,
        measured: `${one.floorRatio.toFixed(3)}×`,
      });
    if (one && many) {
      const scaling = pairedRatio(many.roundRps, one.roundRps);
      checks.push({
        name: `${workload}: ${cluster} ≥ 1.4× one process`,
        pass: scaling >= 1.4,
        // What the machine itself allows, so that a MISS here says whether the workers or the cores fell short.
        measured: `${scaling.toFixed(3)}× (these cores allow at most ${(coresAllow(many) / one.rps).toFixed(2)}×)`,
      });
    }
  }
  const large = find("1 MB response, 200 conns", gateway);
  if (large)
    checks.push({
      name: "1 MB responses at 200 conns: gateway peak RSS < 150 MB",
      pass: large.rssMB < 150,
      measured: `${large.rssMB.toFixed(0)} MB`,
    });
  return checks;
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
