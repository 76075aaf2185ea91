// The answer cache (src/cache/, issue 31), measured three ways in one run:
// - the hit path: a call the cache keeps for good (eth_chainId) at 50 connections against the gateway, the
//   Node floor and the Node ceiling (targets/ceiling.ts), alternating; then the same gateway process on
//   eth_blockNumber, which the bench's deployment relays past the cache, against the floor and beside the
//   same deployment with the cache off: the one-process guard with the cache on;
// - a dApp (cache-dapp.ts): 100 clients sending a scripted mix of reads through the gateway to a real
//   anvil mining a block a second, with the cache on and with it off;
// - memory: a cache with a 256 MB budget filled with final blocks past its budget, and the gateway's peak RSS.
import { dappWithAndWithout } from "../cache-dapp.js";
import { fillCache } from "../cache-fill.js";
import { cacheSeries } from "../cache-metrics.js";
import { compare, summarise } from "../compare.js";
import { BENCH_LABELS, benchConfig } from "../gateway-config.js";
import { compiled } from "../launcher.js";
import { untilAnswering } from "../load.js";
import { freePort } from "../processes.js";
import type { Check } from "../report.js";
import type { Bench, Scenario, ScenarioResult } from "../scenario.js";
import { pairedRatio } from "../stats.js";
import { CACHE_HIT_50, SMALL_CALL_50 } from "../workloads.js";

const GATEWAY = "gateway, cache on";
const GATEWAY_OFF = "gateway, cache off";
const FLOOR = "Node floor";
const CEILING = "Node ceiling";
const HIT = `cache hit, ${CACHE_HIT_50.name}`;
const GUARD = `cache on, uncached ${SMALL_CALL_50.name}`;

const MB = 2 ** 20;
const BUDGET_BYTES = 256 * MB;
/** RSS allowed over the budget: the gateway's own, with its heaps grown for the load. */
const RSS_ALLOWANCE_BYTES = 150 * MB;
/** The filling node's blocks: a block with its transactions' hashes is tens of KB. */
const BLOCK_BYTES = 64 * 1024;
/** The filling node's head: every block the fill reads is far below it, so final. */
const FILL_HEAD = 1_000_000;

export const cacheScenario: Scenario = {
  name: "answer cache",
  async run(bench) {
    const parts = [await hitPath(bench), await dappWithAndWithout(bench), await memory(bench)];
    return {
      rows: parts.flatMap((p) => p.rows),
      checks: parts.flatMap((p) => p.checks),
      notes: parts.flatMap((p) => p.notes ?? []),
    };
  },
};

async function hitPath(bench: Bench): Promise<ScenarioResult> {
  const { launcher, node } = bench;
  const operatorPort = await freePort();
  // As the checked one process runs (scenarios/http.ts): the shared node twice behind `eth`, and the
  // bench's cache settings: the product's defaults, eth_blockNumber relayed past the cache.
  const config = {
    ...benchConfig({ http: node.http, ws: node.ws, labels: BENCH_LABELS, twice: ["eth"] }),
    operator: { listen: { host: "127.0.0.1", port: operatorPort } },
  };
  const gateway = await launcher.startGateway(GATEWAY, {
    deployment: launcher.writeDeployment("cache-on", config),
    ownOperatorPort: true,
  });
  // The same deployment with the cache off, beside the guard: what the cache costs a relayed call.
  const off = await launcher.startGateway(GATEWAY_OFF, {
    deployment: launcher.writeDeployment("cache-off", {
      ...config,
      cache: { enabled: false },
      operator: null,
    }),
  });
  const floor = await launcher.start(FLOOR, compiled("targets/floor.ts"), { BENCH_UPSTREAM: node.http });
  const ceiling = await launcher.start(CEILING, compiled("targets/ceiling.ts"), {});
  bench.progress("cache: gateway, floor and ceiling listening");
  const rounds = { rounds: bench.quick ? 2 : 10, seconds: bench.roundSeconds, upstream: node.target };
  const hits = await compare(CACHE_HIT_50, [floor, gateway, ceiling], rounds);
  const afterHits = await cacheSeries(operatorPort, "eth");
  bench.progress(`cache: ${HIT}`);
  const guard = await compare(SMALL_CALL_50, [floor, gateway, off], rounds);
  const afterGuard = await cacheSeries(operatorPort, "eth");
  bench.progress(`cache: ${GUARD}`);
  await Promise.all([gateway.stop(), off.stop(), floor.stop(), ceiling.stop()]);

  const rows = [...summarise(HIT, hits, FLOOR), ...summarise(GUARD, guard, FLOOR)];
  const find = (scenario: string, target: string) =>
    rows.find((r) => r.scenario === scenario && r.target === target);
  const hit = find(HIT, GATEWAY);
  const top = find(HIT, CEILING);
  const relayed = find(GUARD, GATEWAY);
  const relayedOff = find(GUARD, GATEWAY_OFF);
  const checks: Check[] = [];
  if (hit?.floorRatio !== undefined)
    checks.push({
      name: `${HIT}: gateway ≥ 1.8× the Node floor`,
      pass: hit.floorRatio >= 1.8,
      measured: `${hit.floorRatio.toFixed(3)}×`,
    });
  if (hit !== undefined && top !== undefined) {
    const ratio = pairedRatio(hit.roundRps, top.roundRps);
    checks.push({
      name: `${HIT}: gateway ≥ 0.7× the Node ceiling`,
      pass: ratio >= 0.7,
      measured: `${ratio.toFixed(3)}× (CPU per request: gateway ${hit.cpuMicros.toFixed(1)} µs, ceiling ${top.cpuMicros.toFixed(1)} µs)`,
    });
  }
  if (relayed?.floorRatio !== undefined)
    checks.push({
      name: `${GUARD}: one process ≥ 0.9× the Node floor, with the cache on`,
      pass: relayed.floorRatio >= 0.9,
      measured: `${relayed.floorRatio.toFixed(3)}× (CPU ${relayed.floorCpuRatio?.toFixed(3)}× the floor's)`,
    });
  const lookups = (s: typeof afterHits) => s.hit + s.miss + s.coalesced;
  const notes = [
    `${HIT}: the gateway's cache answered ${afterHits.hit} hits, ${afterHits.miss} misses, ${afterHits.coalesced} coalesced (gateway_cache_requests_total); ` +
      `the ${SMALL_CALL_50.name} rounds after them made ${lookups(afterGuard) - lookups(afterHits)} lookups: relayed past the cache`,
  ];
  if (relayed !== undefined && relayedOff !== undefined)
    notes.push(
      `${GUARD}: cache on at ${(pairedRatio(relayed.roundRps, relayedOff.roundRps) * 100).toFixed(1)}% of cache off's throughput (paired), ` +
        `${relayed.cpuMicros.toFixed(1)} against ${relayedOff.cpuMicros.toFixed(1)} µs of CPU per request; off is ${relayedOff.floorRatio?.toFixed(3)}× the floor`,
    );
  return { rows, checks, notes };
}

async function memory(bench: Bench): Promise<ScenarioResult> {
  const { launcher } = bench;
  const node = await launcher.startNode("node, 64 KB blocks", undefined, {
    BENCH_HEAD: String(FILL_HEAD),
    BENCH_BLOCK_BYTES: String(BLOCK_BYTES),
  });
  const operatorPort = await freePort();
  const base = benchConfig({ http: node.http, ws: node.ws, labels: ["eth"] });
  const config = {
    ...base,
    cache: { ...base.cache, maxBytes: BUDGET_BYTES },
    operator: { listen: { host: "127.0.0.1", port: operatorPort } },
  };
  const gateway = await launcher.startGateway("gateway, 256 MB cache", {
    deployment: launcher.writeDeployment("cache-256mb", config),
    ownOperatorPort: true,
  });
  try {
    await untilAnswering(gateway);
    // until the cache has let go of a quarter of what it holds again, at most three budgets' worth
    const fill = await fillCache(gateway, operatorPort, {
      overfill: 0.25,
      maxCalls: (3 * BUDGET_BYTES) / BLOCK_BYTES,
    });
    bench.progress("cache: filled to its budget");
    const limit = BUDGET_BYTES + RSS_ALLOWANCE_BYTES;
    const { series } = fill;
    return {
      rows: [],
      checks: [
        {
          name: `cache filled to its ${BUDGET_BYTES / MB} MB budget: gateway peak RSS ≤ budget + ${RSS_ALLOWANCE_BYTES / MB} MB`,
          pass: fill.peakRssBytes <= limit,
          measured: `${(fill.peakRssBytes / MB).toFixed(0)} MB (limit ${limit / MB} MB)`,
        },
      ],
      notes: [
        `cache at its budget: ${fill.calls} distinct final eth_getBlockByNumber calls of ${BLOCK_BYTES / 1024} KB in ${fill.seconds.toFixed(1)} s (${fill.failures} failed); ` +
          `the cache then held ${(series.bytes / MB).toFixed(1)} MB in ${series.entries} answers, ${series.evictions} evicted; ` +
          `gateway RSS ${(fill.idleRssBytes / MB).toFixed(0)} MB before, peak ${(fill.peakRssBytes / MB).toFixed(0)} MB, ${(fill.settledRssBytes / MB).toFixed(0)} MB 2 s after the last call`,
      ],
    };
  } finally {
    await Promise.all([gateway.stop(), node.target.stop()]);
  }
}
