import type { BenchNode, Launcher } from "./launcher.js";
import type { Check, FailoverTable, FanoutRow, Row } from "./report.js";

/**
 * One part of a bench run, in a module of its own under scenarios/. It starts the processes it measures
 * (through `bench.launcher`), runs its load, stops what it started and judges what it measured. main.ts
 * runs the scenarios in order and prints their rows, checks and notes in that order.
 */
export interface Scenario {
  /** The progress line once it is done. */
  readonly name: string;
  run(bench: Bench): Promise<ScenarioResult>;
}

export interface ScenarioResult {
  /** Rows of the HTTP table. */
  readonly rows: readonly Row[];
  /** Rows of the WebSocket fan-out table. */
  readonly fanout?: readonly FanoutRow[];
  /** The failover table. */
  readonly failover?: FailoverTable;
  /** PASS or MISS against the targets in bench/README.md. */
  readonly checks: readonly Check[];
  /** NOTE lines: what a reader needs to read the checks, or what was skipped. */
  readonly notes?: readonly string[];
}

/** What the scenarios of one run share. */
export interface Bench {
  /** `--quick`: fewer and shorter rounds, and the small JSON-RPC workload only. */
  readonly quick: boolean;
  /** `--only`: the HTTP workloads whose name contains it; no other scenario runs. */
  readonly only: string | undefined;
  /**
   * A measured round's length. autocannon runs whole seconds (a duration of 0.5 ran for one), so every
   * round is a whole number of them.
   */
  readonly roundSeconds: number;
  /** The node every target relays to; itself the "direct" target. */
  readonly node: BenchNode;
  /** The gateway's deployment file pointing its `eth` and `algo` labels at `node`. */
  readonly deployment: string;
  readonly launcher: Launcher;
  /** A line on stderr with the seconds since the run began. */
  progress(done: string): void;
}
