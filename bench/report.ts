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

/** One fault of the failover scenario, and what the load and the operator API saw. */
export interface FailoverRow {
  readonly fault: string;
  /** The window after the fault that `failed` and the latencies cover. */
  readonly windowSeconds: number;
  readonly rpsBefore: number;
  readonly rpsWindow: number;
  readonly failedWindow: number;
  readonly p99MsBefore: number;
  readonly p99MsWindow: number;
  readonly maxMsWindow: number;
  /** From the fault until the operator API showed the node out of rotation; undefined if it never did. */
  readonly outMs: number | undefined;
  /** From the node running again until the operator API showed it healthy; undefined if it did not. */
  readonly backMs: number | undefined;
  /** Failed from the restart (or resumption) until shortly after the node was back in rotation. */
  readonly failedAfter: number;
}

/** The failover rows, and the settings they were measured with, printed under them. */
export interface FailoverTable {
  readonly rows: readonly FailoverRow[];
  readonly settings: string;
}

export interface Check {
  readonly name: string;
  readonly pass: boolean;
  readonly measured: string;
}

const fixed = (value: number | undefined, digits: number) =>
  value === undefined || Number.isNaN(value) ? "–" : value.toFixed(digits);

const kilobytes = (bytes: number | undefined) => fixed(bytes === undefined ? undefined : bytes / 1024, 1);

export interface Report {
  readonly rows: readonly Row[];
  readonly fanout: readonly FanoutRow[];
  readonly failover: readonly FailoverTable[];
  readonly checks: readonly Check[];
  readonly notes: readonly string[];
}

export function markdown({ rows, fanout, failover, checks, notes }: Report): string {
  const lines = [
    "| scenario | target | req/s | p50 ms | p99 ms | peak RSS MB | CPU µs/req | × floor req/s | × floor CPU | failed |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.scenario} | ${r.target} | ${Math.round(r.rps)} | ${fixed(r.p50Ms, 0)} | ${fixed(r.p99Ms, 0)} | ${fixed(r.rssMB, 0)} | ${fixed(r.cpuMicros, 1)} | ${fixed(r.floorRatio, 2)} | ${fixed(r.floorCpuRatio, 2)} | ${r.failures} |`,
    ),
  ];
  for (const table of failover) {
    lines.push(
      "",
      "| failover | window s | req/s before | req/s in window | failed in window | p99 ms before | p99 ms in window | max ms in window | out of rotation after ms | back in rotation after ms | failed after it ran again |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
      ...table.rows.map(
        (f) =>
          `| ${f.fault} | ${f.windowSeconds} | ${Math.round(f.rpsBefore)} | ${Math.round(f.rpsWindow)} | ${f.failedWindow} | ${fixed(f.p99MsBefore, 0)} | ${fixed(f.p99MsWindow, 0)} | ${fixed(f.maxMsWindow, 0)} | ${fixed(f.outMs, 0)} | ${fixed(f.backMs, 0)} | ${f.failedAfter} |`,
      ),
      "",
      table.settings,
    );
  }
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
