import { measure, type Sample, type Target, type Workload } from "./load.js";
import type { Running } from "./processes.js";
import type { Row } from "./report.js";
import { median, pairedRatio } from "./stats.js";

/** Rounds of a comparison unless a scenario asks for more. */
export const ROUNDS = 3;
const WARMUP_SECONDS = 1;

export interface Rounds {
  rounds?: number;
  seconds: number;
  /** The node, whose CPU per request is read alongside each target's (not while it is the target). */
  upstream?: Running;
  /** Targets that then run `focusRounds` more rounds on their own, in the same alternating orders. */
  focus?: readonly Target[];
  focusRounds?: number;
}

/**
 * Every target runs in turn within a round, so drift on a shared machine hits all alike, and every other
 * round runs them in reverse (A B C, C B A, …), so no target always follows the same one.
 */
export async function compare(
  workload: Workload,
  targets: readonly Target[],
  { rounds = ROUNDS, seconds, upstream, focus = [], focusRounds = 0 }: Rounds,
): Promise<Map<string, Sample[]>> {
  const samples = new Map<string, Sample[]>(targets.map((t) => [t.name, []]));
  for (const target of targets) await measure(target, workload, WARMUP_SECONDS);
  for (let round = 0; round < rounds + focusRounds; round++) {
    const these = round < rounds ? targets : focus;
    for (const target of round % 2 === 0 ? these : [...these].reverse()) {
      const node = target === upstream ? undefined : upstream;
      samples.get(target.name)?.push(await measure(target, workload, seconds, node));
    }
  }
  return samples;
}

/** A row per target: medians of its rounds, and its ratios to `floor`'s paired by round. */
export function summarise(
  scenario: string,
  samples: Map<string, Sample[]>,
  floor: string | undefined,
): Row[] {
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
