// Failover: the gateway in one process with two bench nodes behind `eth`, `a` and `b`, each its own
// process, under the 50-connection eth_blockNumber load. After a few seconds `a` is killed (SIGKILL) or
// frozen (SIGSTOP); after the window it runs again (restarted on its port, or SIGCONT). Read: what failed
// and how slow the answers were in the window after the fault, from the load; how long until `a` was out
// of rotation and, once it ran again, back in, from the gateway's operator API. The gateway keeps its
// default health settings: the point is what an operator gets without tuning them.
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { benchConfig, namedUpstream } from "../gateway-config.js";
import type { BenchNode, Launcher } from "../launcher.js";
import { UpstreamWatch } from "../operator-watch.js";
import { PhasedLoad, type PhaseResult } from "../phased-load.js";
import { freePort } from "../processes.js";
import type { Check, FailoverRow } from "../report.js";
import type { Scenario } from "../scenario.js";
import { SMALL_CALL_50 } from "../workloads.js";

/** What is done to node `a`, and how it runs again. */
export interface Fault {
  readonly kind: "kill" | "hang";
  readonly name: string;
  inflict(a: BenchNode): void;
  /** Resolves once `a` runs again, with the node it now is. */
  mend(a: BenchNode, launcher: Launcher): Promise<BenchNode>;
}

const KILL: Fault = {
  kind: "kill",
  name: "kill a (SIGKILL), then restart it on its port",
  inflict: (a) => a.target.child.kill("SIGKILL"),
  mend: (a, launcher) => launcher.startNode("node a, restarted", a),
};

const HANG: Fault = {
  kind: "hang",
  name: "hang a (SIGSTOP), then resume it (SIGCONT)",
  inflict: (a) => a.target.child.kill("SIGSTOP"),
  mend: async (a) => {
    a.target.child.kill("SIGCONT");
    return a;
  },
};

interface Timing {
  readonly warmUpSeconds: number;
  /** Load before the fault. */
  readonly beforeSeconds: number;
  /** From the fault until `a` runs again; what `failed in window` covers. */
  readonly windowSeconds: number;
}

const FULL: Timing = { warmUpSeconds: 2, beforeSeconds: 3, windowSeconds: 10 };
const QUICK: Timing = { warmUpSeconds: 1, beforeSeconds: 2, windowSeconds: 5 };
/** How long `a` may take to be back in rotation before the row says it was not. */
const BACK_WITHIN_MS = 30_000;
/** Load kept on once `a` is back, so that its first calls again count in `failed after`. */
const AFTER_BACK_MS = 2_000;

const HEALTH = DEFAULT_HEALTH;
const HEDGE = DEFAULT_LIMITS.upstream;
const SETTINGS = [
  `Failover: the gateway in one process, \`eth\` on bench nodes a and b (a process each), ${SMALL_CALL_50.name};`,
  "a is faulted after a few seconds of load and runs again after the window.",
  `Health settings, the defaults: probes every ${HEALTH.probeIntervalMs} ms ± 20%, timeout ${HEALTH.probeTimeoutMs} ms;`,
  `out at a failed probe, a refused connection or ${HEALTH.failAfter} failed calls in a row;`,
  `back after ${HEALTH.recoverAfter} good probes in a row; reads retried after a refused or reset connection, a 5xx or 429,`,
  `and hedged after the node's latency + 4 deviations (${HEDGE.hedgeMinMs}–${HEDGE.hedgeMaxMs} ms).`,
  "Out of and back in rotation: a's `state` in GET /upstreams, polled every 50 ms;",
  "back is timed from when a listens again, or from SIGCONT.",
].join(" ");

export const failover: Scenario = {
  name: "failover",
  async run(bench) {
    const faults = bench.quick ? [KILL] : [KILL, HANG];
    const timing = bench.quick ? QUICK : FULL;
    const rows: FailoverRow[] = [];
    const checks: Check[] = [];
    const notes: string[] = [];
    for (const fault of faults) {
      const outcome = await runFault(bench.launcher, fault, timing);
      rows.push(outcome.row);
      checks.push(...judge(fault, outcome.row, SMALL_CALL_50.connections, HEALTH.probeIntervalMs));
      notes.push(...outcome.notes);
      bench.progress(`failover: ${fault.kind}`);
    }
    return { rows: [], failover: { rows, settings: SETTINGS }, checks, notes };
  },
};

async function runFault(
  launcher: Launcher,
  fault: Fault,
  timing: Timing,
): Promise<{ row: FailoverRow; notes: string[] }> {
  const a = await launcher.startNode("node a");
  const b = await launcher.startNode("node b");
  const operatorPort = await freePort();
  const deployment = launcher.writeDeployment(`failover-${fault.kind}`, {
    ...benchConfig({ http: a.http, ws: a.ws, labels: ["eth"] }),
    upstreams: { eth: [namedUpstream("a", a), namedUpstream("b", b)] },
    operator: { listen: { host: "127.0.0.1", port: operatorPort } },
  });
  const gateway = await launcher.startGateway(`gateway, failover: ${fault.kind}`, {
    deployment,
    ownOperatorPort: true,
  });
  const watch = new UpstreamWatch(operatorPort, "eth");
  let again = a;
  try {
    for (const name of ["a", "b"])
      if ((await watch.until(name, isHealthy, 0, 10_000)) === undefined)
        throw new Error(`failover: upstream ${name} was not healthy 10 s after the gateway started`);
    const load = new PhasedLoad(gateway, SMALL_CALL_50, "warm-up");
    await sleep(timing.warmUpSeconds * 1000);
    load.phase("before");
    await sleep(timing.beforeSeconds * 1000);
    const faultAt = performance.now();
    fault.inflict(a);
    load.phase("window");
    await sleep(timing.windowSeconds * 1000);
    load.phase("after");
    again = await fault.mend(a, launcher);
    const runningAt = performance.now();
    const back = await watch.until("a", isHealthy, runningAt, BACK_WITHIN_MS);
    if (back !== undefined) await sleep(AFTER_BACK_MS);
    const phases = await load.stop();
    const out = await watch.until("a", (state) => !isHealthy(state), faultAt, 0);
    const before = phases.get("before") as PhaseResult;
    const window = phases.get("window") as PhaseResult;
    const after = phases.get("after") as PhaseResult;
    const row: FailoverRow = {
      fault: fault.name,
      windowSeconds: timing.windowSeconds,
      rpsBefore: before.answered / before.seconds,
      rpsWindow: window.answered / window.seconds,
      failedWindow: window.failed,
      p99MsBefore: before.p99Ms,
      p99MsWindow: window.p99Ms,
      maxMsWindow: window.maxMs,
      outMs: out && out.at - faultAt,
      backMs: back && back.at - runningAt,
      failedAfter: after.failed,
    };
    const notes = [
      out === undefined
        ? `failover, ${fault.kind}: the operator API never showed a out of rotation`
        : `failover, ${fault.kind}: a went ${out.state}, last error: ${out.lastError ?? "none"}`,
    ];
    const left = watch.changes.get("b")?.filter((seen) => !isHealthy(seen.state)) ?? [];
    if (left.length > 0)
      notes.push(
        `failover, ${fault.kind}: b, which stayed up, was seen ${left.map((s) => `${s.state} (${s.lastError})`).join(", ")}`,
      );
    const lost = window.lost + after.lost;
    if (lost > 0)
      notes.push(
        `failover, ${fault.kind}: ${lost} of the failed requests were lost with a connection the gateway closed`,
      );
    return { row, notes };
  } finally {
    await watch.stop();
    await Promise.all([gateway.stop(), b.target.stop(), again.target.stop(), a.target.stop()]);
  }
}

/**
 * The aims: no read fails when a node dies (every failure before an answer is retried on the other);
 * a hung node costs at most the calls that were on it (in practice none, since reads are hedged); and the
 * node is out of rotation within two probe intervals.
 */
export function judge(fault: Fault, row: FailoverRow, connections: number, probeIntervalMs: number): Check[] {
  const failed = row.failedWindow + row.failedAfter;
  const allowed = fault.kind === "kill" ? 0 : connections;
  const outWithin = 2 * probeIntervalMs;
  return [
    {
      name:
        fault.kind === "kill"
          ? "failover, kill: no failed read, from the fault until a is back in rotation"
          : `failover, hang: failed reads at most the ${connections} calls that can be in flight on a`,
      pass: failed <= allowed,
      measured: `${failed} failed (${row.failedWindow} in the ${row.windowSeconds} s after the fault, ${row.failedAfter} once a ran again)`,
    },
    {
      name: `failover, ${fault.kind}: a out of rotation within two probe intervals (${outWithin} ms)`,
      pass: row.outMs !== undefined && row.outMs <= outWithin,
      measured: row.outMs === undefined ? "never" : `${Math.round(row.outMs)} ms`,
    },
  ];
}

function isHealthy(state: string): boolean {
  return state === "healthy";
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
