// `npm run bench [-- --quick | --only <workload>]`: the gateway against direct access, the Node floor and
// the proxies a Node user would pick instead, in one run on one machine. bench/README.md explains the
// method and the targets; a full run rewrites its results section.
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { packageRoot } from "../src/package-root.js";
import { ROUNDS } from "./compare.js";
import { BENCH_LABELS, benchConfig } from "./gateway-config.js";
import { Launcher } from "./launcher.js";
import { commitUnderTest, writeResults } from "./readme-results.js";
import { markdown } from "./report.js";
import type { Bench, Scenario, ScenarioResult } from "./scenario.js";
import { binary } from "./scenarios/binary.js";
import { budgetScaling } from "./scenarios/budget.js";
import { cacheScenario } from "./scenarios/cache.js";
import { failover } from "./scenarios/failover.js";
import { featureCosts } from "./scenarios/features.js";
import { headScenario } from "./scenarios/head.js";
import { httpScenarios } from "./scenarios/http.js";
import { memory } from "./scenarios/memory.js";
import { metricsCost } from "./scenarios/metrics.js";
import { profile } from "./scenarios/profile.js";
import { revocation } from "./scenarios/revocation.js";
import { routingCost } from "./scenarios/routing.js";
import { sharedLimits } from "./scenarios/shared-limits.js";
import { tracingCost } from "./scenarios/tracing.js";
import { webSocketFanout } from "./scenarios/ws-fanout.js";

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    // while working on one thing: only HTTP workloads whose name contains this, and no other scenario
    only: { type: "string" },
    // or only the scenario whose name contains this ("fan-out", "failover", "cache")
    scenario: { type: "string" },
  },
});
const quick = args.quick;
const full = !quick && args.only === undefined && args.scenario === undefined;
const ALL: readonly Scenario[] = [
  httpScenarios,
  metricsCost,
  tracingCost,
  sharedLimits,
  budgetScaling,
  routingCost,
  failover,
  headScenario,
  cacheScenario,
  webSocketFanout,
  revocation,
  memory,
  binary,
];
/** Run only when named: the profiler's own cost would skew the full run's rows. */
const ON_REQUEST: readonly Scenario[] = [profile, featureCosts];
const SCENARIOS: readonly Scenario[] =
  args.only !== undefined
    ? [httpScenarios]
    : args.scenario === undefined
      ? ALL
      : [...ALL, ...ON_REQUEST].filter((s) => s.name.includes(args.scenario as string));

const began = Date.now();
const progress = (done: string) =>
  process.stderr.write(`${((Date.now() - began) / 1000).toFixed(0)} s: ${done}\n`);
const root = packageRoot();
const commit = commitUnderTest(root);

const launcher = new Launcher(root);
await launcher.build();
progress("built");
const node = await launcher.startNode("direct");
const bench: Bench = {
  quick,
  only: args.only,
  roundSeconds: quick ? 1 : 2,
  node,
  deployment: launcher.writeDeployment(
    "gateway",
    benchConfig({ http: node.http, ws: node.ws, labels: BENCH_LABELS }),
  ),
  launcher,
  progress,
};
const outcomes: ScenarioResult[] = [];
for (const scenario of SCENARIOS) {
  outcomes.push(await scenario.run(bench));
  // What a scenario left running would take cores from the next one.
  await launcher.stopAll([node.target]);
  progress(scenario.name);
}
await launcher.stopAll();

const rows = outcomes.flatMap((r) => r.rows);
const fanout = outcomes.flatMap((r) => r.fanout ?? []);
const failovers = outcomes.flatMap((r) => r.failover ?? []);
const checks = outcomes.flatMap((r) => r.checks);
const notes = outcomes.flatMap((r) => r.notes ?? []);
const table = markdown({ rows, fanout, failover: failovers, checks, notes });
const seconds = Math.round((Date.now() - began) / 1000);
const machine = `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GB, Node ${process.version}`;
const run = `${quick ? "quick" : "full"} run, ${seconds} s, ${machine}`;
process.stdout.write(`\n${table}\n\n${run}\n`);

const dir = join(root, "bench", "results");
mkdirSync(dir, { recursive: true });
const file = join(dir, `${new Date().toISOString().replace(/[:.]/g, "-")}${quick ? "-quick" : ""}.json`);
writeFileSync(
  file,
  `${JSON.stringify({ quick, seconds, machine, rounds: ROUNDS, rows, fanout, failover: failovers, checks, notes }, null, 2)}\n`,
);
process.stdout.write(`written: ${file}\n`);
if (full) {
  const finished = `${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC`;
  const readme = join(root, "bench", "README.md");
  try {
    writeResults(readme, `Commit ${commit}, finished ${finished}.\n\n${table}\n\n${run}`);
    process.stdout.write(`written: ${readme}, between its results markers\n`);
  } catch (error) {
    process.stderr.write(`${readme} not written: ${(error as Error).message}\n`);
    process.exitCode = 1;
  }
}
