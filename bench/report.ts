import type { FanoutResult } from "./ws-load.js";

export interface Row {
  readonly scenario: string;
  readonly target: string;
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly rssMB: number;
  /** The target's CPU time per request, in microseconds, over all its processes. */
  readonly cpuMicros: number;
  /** The load generator's CPU per request, in microseconds. */
  readonly clientMicros: number;
  /** The upstream node's CPU per request, in microseconds (undefined for the node itself). */
  readonly upstreamMicros: number | undefined;
  /** Throughput over the Node floor's in the same scenario: the median of the rounds' own ratios. */
  readonly floorRatio: number | undefined;
  /** CPU per request over the Node floor's in the same scenario, as floorRatio. */
  readonly floorCpuRatio: number | undefined;
  readonly failures: number;
  readonly rounds: number;
  /** Each round's requests per second, in round order, for ratios paired by round. */
  readonly roundRps: readonly number[];
}

export interface FanoutRow extends FanoutResult {
  readonly target: string;
}

export interface Check {
  readonly name: string;
  readonly pass: boolean;
  readonly measured: string;
}

const fixed = (value: number | undefined, digits: number) =>
  value === undefined || Number.isNaN(value) ? "–" : value.toFixed(digits);

const kilobytes = (bytes: number | undefined) => fixed(bytes === undefined ? undefined : bytes / 1024, 1);

export function markdown(
  rows: readonly Row[],
  fanout: readonly FanoutRow[],
  checks: readonly Check[],
  notes: readonly string[] = [],
): string {
  const lines = [
    "| scenario | target | req/s | p50 ms | p99 ms | peak RSS MB | CPU µs/req | × floor req/s | × floor CPU | failed |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.scenario} | ${r.target} | ${Math.round(r.rps)} | ${fixed(r.p50Ms, 0)} | ${fixed(r.p99Ms, 0)} | ${fixed(r.rssMB, 0)} | ${fixed(r.cpuMicros, 1)} | ${fixed(r.floorRatio, 2)} | ${fixed(r.floorCpuRatio, 2)} | ${r.failures} |`,
    ),
  ];
  if (fanout.length > 0) {
    lines.push(
      "",
      "| WebSocket fan-out | connections | RSS per connection KB | the second half's, per connection KB | push p50 ms | push p99 ms |",
      "|---|---:|---:|---:|---:|---:|",
      ...fanout.map(
        (f) =>
          `| ${f.target} | ${f.connections} | ${kilobytes(f.bytesPerConnection)} | ${kilobytes(f.marginalBytesPerConnection)} | ${fixed(f.p50Ms, 1)} | ${fixed(f.p99Ms, 1)} |`,
      ),
    );
  }
  lines.push("", ...checks.map((c) => `- ${c.pass ? "PASS" : "MISS"} ${c.name}: ${c.measured}`));
  lines.push(...notes.map((note) => `- NOTE ${note}`));
  return lines.join("\n");
}
