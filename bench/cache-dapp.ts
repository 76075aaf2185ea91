// The cache scenario's dApp (scenarios/cache.ts): 100 clients send a scripted mix of reads (dapp-load.ts)
// through the gateway to a real anvil mining a block a second, once with the cache on and once with it
// off, the same mix for the same time. A counting forwarder (forwarder.ts) between the gateway and anvil
// says how many node requests a client request cost, and every eth_blockNumber answer is set against
// anvil's own head at the moment it arrived.
import { anvilBinary, type SeededChain, seedChain, startAnvil } from "./anvil.js";
import { type DappRun, runDapp } from "./dapp-load.js";
import { benchConfig } from "./gateway-config.js";
import { compiled } from "./launcher.js";
import { type Target, untilAnswering } from "./load.js";
import type { Check, Row } from "./report.js";
import type { Bench, ScenarioResult } from "./scenario.js";

const MB = 2 ** 20;
const CLIENTS = 100;
const DAPP = `cache, dApp mix, ${CLIENTS} clients`;
const DAPP_ON = "gateway, cache on";
const DAPP_OFF = "gateway, cache off";
/**
 * The dApp runs once with each, the same mix for the same time. The first two are the ones checked. The
 * third is a reading, not a check: `eth` keeps an answer read at the head at most half its registry block
 * time, capped at 2 s (12 s blocks: 2 s), which is two of anvil's one-second blocks; kept at most half of
 * anvil's block instead, it shows what the head rule itself gives a chain that fast.
 */
const VARIANTS = [
  { name: DAPP_ON, cache: { labels: {} } },
  { name: DAPP_OFF, cache: { enabled: false, labels: {} } },
  { name: "gateway, cache on, heads kept ≤ 500 ms", cache: { headMaxAgeMs: 500, labels: {} } },
] as const;

export async function dappWithAndWithout(bench: Bench): Promise<ScenarioResult> {
  const { launcher } = bench;
  const binary = anvilBinary(launcher.root);
  if (binary === undefined)
    return {
      rows: [],
      checks: [],
      notes: [
        `${DAPP}: skipped, no anvil (the optional package @foundry-rs/anvil-linux-amd64, or anvil on the PATH)`,
      ],
    };
  const seconds = bench.quick ? 3 : 10;
  // chain id 1: the `eth` label's, which the gateway's prober checks
  const anvil = await startAnvil(binary, 1, 1);
  const runs: { name: string; run: DappRun; client: number; prober: number; methods: string }[] = [];
  let chain: SeededChain | undefined;
  try {
    chain = await seedChain(anvil);
    const forwarder = await launcher.start("counting forwarder", compiled("forwarder.ts"), {
      BENCH_UPSTREAM: anvil.url,
    });
    const upstream = { http: `http://127.0.0.1:${forwarder.port}`, ws: anvil.ws };
    for (const { name, cache } of VARIANTS) {
      const config = { ...benchConfig({ ...upstream, labels: ["eth"] }), cache };
      const gateway = await launcher.startGateway(name, {
        deployment: launcher.writeDeployment(`dapp-${name.replace(/\W+/g, "-")}`, config),
      });
      await untilAnswering(gateway);
      const before = await counts(forwarder);
      const run = await runDapp(gateway, anvil.url, chain, CLIENTS, seconds);
      const after = await counts(forwarder);
      await gateway.stop();
      const methods = Object.entries(after.methods)
        .map(([method, n]) => [method, n - (before.methods[method] ?? 0)] as const)
        .filter(([, n]) => n > 0)
        .sort((a, b) => b[1] - a[1])
        .map(([method, n]) => `${method} ${n}`)
        .join(", ");
      runs.push({
        name,
        run,
        client: after.client - before.client,
        prober: after.prober - before.prober,
        methods,
      });
      bench.progress(`cache: ${DAPP}, ${name}`);
    }
    await forwarder.stop();
  } finally {
    await anvil.stop();
  }
  const rows: Row[] = runs.map(({ name, run }) => ({
    scenario: DAPP,
    target: name,
    rps: run.requests / run.seconds,
    p50Ms: run.p50Ms,
    p99Ms: run.p99Ms,
    rssMB: run.rssBytes / MB,
    cpuMicros: run.cpuMicros,
    clientMicros: run.clientMicros,
    upstreamMicros: undefined,
    floorRatio: undefined,
    floorCpuRatio: undefined,
    failures: run.failures,
    rounds: 1,
    roundRps: [run.requests / run.seconds],
  }));
  const perRequest = (r: (typeof runs)[number]) => r.client / Math.max(1, r.run.requests);
  const notes = runs.flatMap((r) => [
    `${DAPP}, ${r.name}: ${r.run.requests} requests in ${seconds} s; anvil got ${r.client} requests for them, ` +
      `${perRequest(r).toFixed(3)} per client request (${((r.client + r.prober) / Math.max(1, r.run.requests)).toFixed(3)} with the prober's ${r.prober}); ` +
      `p50 ${r.run.p50Ms.toFixed(2)} ms, p99 ${r.run.p99Ms.toFixed(2)} ms; ` +
      `${r.run.heads} eth_blockNumber answers, ${r.run.stale} more than one block behind anvil's head, ${r.run.oneBehind} one behind; ` +
      `x-cache ${Object.entries(r.run.xCache)
        .map(([outcome, n]) => `${outcome} ${n}`)
        .join(", ")}`,
    `${DAPP}, ${r.name}: anvil's requests by method: ${r.methods}`,
    ...Object.entries(r.run.failed)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(([kind, n]) => `${DAPP}, ${r.name}: ${n} failed: ${kind}`),
  ]);
  const on = runs.find((r) => r.name === DAPP_ON);
  const off = runs.find((r) => r.name === DAPP_OFF);
  const checks: Check[] = [];
  if (on !== undefined && off !== undefined && chain !== undefined) {
    notes.push(
      `${DAPP}: blocks, ${chain.transactions.length} receipts and their logs read at blocks final from ${chain.finalized} down, state at the 16 newest final blocks as each run began; ` +
        `latency cache on against off: p50 ${on.run.p50Ms.toFixed(2)} against ${off.run.p50Ms.toFixed(2)} ms, p99 ${on.run.p99Ms.toFixed(2)} against ${off.run.p99Ms.toFixed(2)} ms`,
    );
    checks.push(
      {
        name: `${DAPP}: ≤ 0.35 node requests per client request with the cache on`,
        pass: perRequest(on) <= 0.35,
        measured: `${perRequest(on).toFixed(3)} (cache off ${perRequest(off).toFixed(3)})`,
      },
      {
        name: `${DAPP}: no eth_blockNumber answer more than one block behind anvil's head, cache on`,
        pass: on.run.stale === 0,
        measured: `${on.run.stale} of ${on.run.heads} (cache off ${off.run.stale} of ${off.run.heads})`,
      },
    );
  }
  return { rows, checks, notes };
}

async function counts(
  forwarder: Target,
): Promise<{ client: number; prober: number; methods: Record<string, number> }> {
  const response = await fetch(`http://127.0.0.1:${forwarder.port}/counts`);
  return (await response.json()) as { client: number; prober: number; methods: Record<string, number> };
}
