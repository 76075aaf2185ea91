// The cost of OpenTelemetry traces (docs/operations.md, "Traces"): the gateway with tracing off (the
// default), on at 0% (the sampling decision alone), at 1% and at 100%, exporting over OTLP/HTTP to a sink in this process, next to
// the Node floor, in one run. Off must keep the one-process guard; on at 1% is what the note reports.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { compare, summarise } from "../compare.js";
import { BENCH_LABELS, benchConfig } from "../gateway-config.js";
import { compiled } from "../launcher.js";
import type { Check, Row } from "../report.js";
import type { Scenario } from "../scenario.js";
import { pairedRatio } from "../stats.js";
import { SMALL_CALL_50 } from "../workloads.js";

const OFF = "gateway, tracing off";
const NONE = "gateway, tracing at 0%";
const SOME = "gateway, tracing at 1%";
const ALL = "gateway, tracing at 100%";

export const tracingCost: Scenario = {
  name: "tracing cost",
  async run(bench) {
    const { launcher, node } = bench;
    // a collector that takes every export and keeps nothing: what is measured is the gateway's side
    let exports = 0;
    const sink = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        exports += 1;
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
    const endpoint = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/v1/traces`;
    const config = benchConfig({ http: node.http, ws: node.ws, labels: BENCH_LABELS });
    const traced = (name: string, sampleRatio: number) =>
      launcher.startGateway(name, {
        deployment: launcher.writeDeployment(`tracing-${sampleRatio}`, {
          ...config,
          tracing: { enabled: true, endpoint, sampleRatio },
        }),
      });
    const off = await launcher.startGateway(OFF, {
      deployment: launcher.writeDeployment("tracing-off", config),
    });
    const none = await traced(NONE, 0);
    const some = await traced(SOME, 0.01);
    const all = await traced(ALL, 1);
    const floor = await launcher.start("Node floor", compiled("targets/floor.ts"), {
      BENCH_UPSTREAM: node.http,
    });
    bench.progress("tracing off, at 0%, 1% and 100% listening");
    const samples = await compare(SMALL_CALL_50, [floor, off, none, some, all], {
      rounds: bench.quick ? 2 : 10,
      seconds: bench.roundSeconds,
      upstream: node.target,
    });
    await Promise.all([off.stop(), none.stop(), some.stop(), all.stop(), floor.stop()]);
    await new Promise<void>((resolve) => sink.close(() => resolve()));
    const rows = summarise(`tracing, ${SMALL_CALL_50.name}`, samples, floor.name);
    const notes = [...againstOff(rows), `tracing: the sink took ${exports} exports`];
    return { rows, checks: judge(rows, exports), notes };
  },
};

function judge(rows: readonly Row[], exports: number): Check[] {
  const off = rows.find((r) => r.target === OFF);
  if (off?.floorRatio === undefined || off.floorCpuRatio === undefined) return [];
  return [
    {
      name: "tracing off: ≥ 0.9× the Node floor",
      pass: off.floorRatio >= 0.9,
      measured: `${off.floorRatio.toFixed(3)}×`,
    },
    // a run whose spans never left would measure a tracer that does nothing
    { name: "tracing on: spans reached the collector", pass: exports > 0, measured: `${exports} exports` },
  ];
}

/** Each sampling rate against tracing off, paired by round: the cost the note reports. */
function againstOff(rows: readonly Row[]): string[] {
  const off = rows.find((r) => r.target === OFF);
  if (off === undefined) return [];
  return [NONE, SOME, ALL].flatMap((name) => {
    const on = rows.find((r) => r.target === name);
    if (on === undefined) return [];
    const ratio = pairedRatio(on.roundRps, off.roundRps);
    return [
      `${name}: ${(ratio * 100).toFixed(1)}% of tracing off's throughput, ${on.cpuMicros.toFixed(1)} against ${off.cpuMicros.toFixed(1)} µs of CPU per request`,
    ];
  });
}
