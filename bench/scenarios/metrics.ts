// The cost of the data plane's metrics: the gateway with its Prometheus series (the default) and with
// `metrics.enabled: false`, next to the Node floor, in one run. Each is checked against the floor as the
// one-process check is, so the note's two figures come from the same rounds.
import { compare, summarise } from "../compare.js";
import { BENCH_LABELS, benchConfig } from "../gateway-config.js";
import { compiled } from "../launcher.js";
import type { Check, Row } from "../report.js";
import type { Scenario } from "../scenario.js";
import { pairedRatio } from "../stats.js";
import { SMALL_CALL_50 } from "../workloads.js";

const ON = "gateway, metrics on";
const OFF = "gateway, metrics off";

export const metricsCost: Scenario = {
  name: "metrics cost",
  async run(bench) {
    const { launcher, node } = bench;
    const config = benchConfig({ http: node.http, ws: node.ws, labels: BENCH_LABELS, twice: ["eth"] });
    const on = await launcher.startGateway(ON, {
      deployment: launcher.writeDeployment("metrics-on", config),
    });
    const off = await launcher.startGateway(OFF, {
      deployment: launcher.writeDeployment("metrics-off", { ...config, metrics: { enabled: false } }),
    });
    const floor = await launcher.start("Node floor", compiled("targets/floor.ts"), {
      BENCH_UPSTREAM: node.http,
    });
    bench.progress("metrics on and off listening");
    const samples = await compare(SMALL_CALL_50, [floor, on, off], {
      rounds: bench.quick ? 2 : 10,
      seconds: bench.roundSeconds,
      upstream: node.target,
    });
    await Promise.all([on.stop(), off.stop(), floor.stop()]);
    const rows = summarise(`metrics, ${SMALL_CALL_50.name}`, samples, floor.name);
    return { rows, checks: judge(rows), notes: onAgainstOff(rows) };
  },
};

function judge(rows: readonly Row[]): Check[] {
  const on = rows.find((r) => r.target === ON);
  const off = rows.find((r) => r.target === OFF);
  if (on?.floorRatio === undefined || on.floorCpuRatio === undefined || off === undefined) return [];
  return [
    {
      name: "metrics on: ≥ 0.9× the Node floor",
      pass: on.floorRatio >= 0.9,
      measured: `${on.floorRatio.toFixed(3)}× (off ${off.floorRatio?.toFixed(3)}×)`,
    },
    {
      name: "metrics on: CPU per request ≤ 1.1× the Node floor's",
      pass: on.floorCpuRatio <= 1.1,
      measured: `${on.floorCpuRatio.toFixed(3)}× (off ${off.floorCpuRatio?.toFixed(3)}×)`,
    },
  ];
}

/**
 * On against off, paired by round. A NOTE, not a check: updating the series costs about 0.04 µs of a
 * request's 30 (a loop over GatewayMetrics.request), well under what one round's noise moves.
 */
function onAgainstOff(rows: readonly Row[]): string[] {
  const on = rows.find((r) => r.target === ON);
  const off = rows.find((r) => r.target === OFF);
  if (on === undefined || off === undefined) return [];
  const ratio = pairedRatio(on.roundRps, off.roundRps);
  return [
    `metrics: on at ${(ratio * 100).toFixed(1)}% of off's throughput, ${on.cpuMicros.toFixed(1)} against ${off.cpuMicros.toFixed(1)} µs of CPU per request`,
  ];
}
