// The multi-process mode's scaling as a machine with cores to spare would show it: one process held to
// half a core and the cluster held to half a core per worker (Linux cgroup CPU quotas), alternating. On
// two cores shared with the load generator and the node, the unbudgeted comparison measures the machine
// (the NOTE lines of scenarios/http.ts); this one measures what a second worker adds.
import { cpus } from "node:os";
import { compare, summarise } from "../compare.js";
import { createCpuBudget } from "../cpu-budget.js";
import { measure } from "../load.js";
import type { Check, Row } from "../report.js";
import type { Bench, Scenario } from "../scenario.js";
import { pairedRatio } from "../stats.js";
import { SMALL_CALL_50 } from "../workloads.js";

// Half a core per process: the load generator and the node keep enough of the two cores to drive a
// cluster that uses twice that, so what limits each target is its own budget.
const BUDGET_PER_PROCESS = 0.5;
const WORKERS = cpus().length;
const ONE_BUDGETED = `gateway, ${BUDGET_PER_PROCESS} CPU`;
const MANY_BUDGETED = `gateway, ${WORKERS} workers, ${WORKERS} × ${BUDGET_PER_PROCESS} CPU`;
const NO_BUDGET =
  "scaling at a CPU budget skipped: no writable cgroup with a CPU controller (run the bench as root, or in a delegated cgroup)";

export const budgetScaling: Scenario = {
  name: "scaling at a CPU budget",
  async run(bench) {
    const rows = await scalingAtBudget(bench);
    if (rows === undefined) return { rows: [], checks: [], notes: [NO_BUDGET] };
    return { rows, checks: judge(rows) };
  },
};

/** Undefined where no quota can be set. */
async function scalingAtBudget({ launcher, deployment, node, quick, roundSeconds }: Bench) {
  const one = createCpuBudget("gateway-bench-one", BUDGET_PER_PROCESS);
  const many = createCpuBudget("gateway-bench-many", BUDGET_PER_PROCESS * WORKERS);
  try {
    if (one === undefined || many === undefined) return undefined;
    const single = await launcher.startGateway(ONE_BUDGETED, { deployment, budget: one });
    const cluster = await launcher.startGateway(MANY_BUDGETED, {
      deployment,
      workers: WORKERS,
      budget: many,
    });
    // Warmed up unbudgeted, as the other targets were (their compiled hot paths are not what is compared).
    for (const budget of [one, many]) budget.enforce(false);
    for (const target of [single, cluster]) await measure(target, SMALL_CALL_50, roundSeconds);
    for (const budget of [one, many]) budget.enforce(true);
    const samples = await compare(SMALL_CALL_50, [single, cluster], {
      rounds: quick ? 2 : 6,
      seconds: roundSeconds,
      upstream: node.target,
    });
    await Promise.all([single.stop(), cluster.stop()]);
    return summarise(`CPU budget, ${SMALL_CALL_50.name}`, samples, undefined);
  } finally {
    await Promise.all([one?.remove(), many?.remove()]);
  }
}

function judge(rows: readonly Row[]): Check[] {
  const single = rows.find((r) => r.target === ONE_BUDGETED);
  const cluster = rows.find((r) => r.target === MANY_BUDGETED);
  if (!single || !cluster) return [];
  const scaling = pairedRatio(cluster.roundRps, single.roundRps);
  return [
    {
      name: `${MANY_BUDGETED} ≥ 1.4× one process with ${BUDGET_PER_PROCESS} CPU`,
      pass: scaling >= 1.4,
      measured: `${scaling.toFixed(3)}×`,
    },
  ];
}
