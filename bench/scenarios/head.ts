// Two nodes one block apart: the gateway in one process with two bench nodes behind `eth`, whose heads move
// on every BLOCK_MS, `b` reaching each block LAG_MS after `a`. 50 clients each send eth_blockNumber one
// after another and count the answers lower than the last one they got: head regressions, which the
// served-head rule (src/answers/) must keep at 0. The same load against two nodes at the same height gives
// the latency to compare against: what the rule costs a caller in p50 and p99.
import { Pool } from "undici";
import { BENCH_KEY, benchConfig, namedUpstream } from "../gateway-config.js";
import type { Check } from "../report.js";
import type { Bench, Scenario } from "../scenario.js";
import { percentile } from "../stats.js";

const BLOCK_MS = 1_000;
const LAG_MS = 400;
const CLIENTS = 50;
const BODY = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';

interface HeadRun {
  readonly name: string;
  readonly requests: number;
  readonly regressions: number;
  /** Clients that saw at least one regression. */
  readonly clientsBackwards: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly rps: number;
}

export const headScenario: Scenario = {
  name: "two nodes one block apart",
  async run(bench) {
    const seconds = bench.quick ? 3 : 10;
    const apart = await measure(bench, `b ${LAG_MS} ms behind a`, LAG_MS, seconds);
    const same = await measure(bench, "both at the same height", 0, seconds);
    const notes = [apart, same].map(
      (r) =>
        `two nodes, ${r.name}: ${r.requests} eth_blockNumber calls from ${CLIENTS} clients in ${seconds} s ` +
        `(${Math.round(r.rps)} req/s), ${r.regressions} head regressions (${r.clientsBackwards} clients), ` +
        `p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms`,
    );
    const checks: Check[] = [
      {
        name: "no client sees the head go backwards across two nodes one block apart",
        pass: apart.regressions === 0,
        measured: `${apart.regressions} regressions in ${apart.requests} calls`,
      },
    ];
    return { rows: [], checks, notes };
  },
};

async function measure(bench: Bench, name: string, lagMs: number, seconds: number): Promise<HeadRun> {
  const { launcher } = bench;
  const env = (lag: number) => ({ BENCH_BLOCK_MS: String(BLOCK_MS), BENCH_HEAD_LAG_MS: String(lag) });
  const [a, b] = await Promise.all([
    launcher.startNode("node a", undefined, env(0)),
    launcher.startNode("node b", undefined, env(lagMs)),
  ]);
  const config = {
    ...benchConfig({ http: a.http, ws: a.ws, labels: ["eth"] }),
    upstreams: { eth: [namedUpstream("a", a), namedUpstream("b", b)] },
  };
  const gateway = await launcher.startGateway(`gateway, ${name}`, {
    deployment: launcher.writeDeployment(`head-${lagMs}`, config),
  });
  const pool = new Pool(`http://127.0.0.1:${gateway.port}`, { connections: CLIENTS });
  // the prober's first verdicts on both nodes
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  const latencies: number[] = [];
  let regressions = 0;
  let clientsBackwards = 0;
  const until = performance.now() + seconds * 1000;
  const client = async (): Promise<void> => {
    let last = -1;
    let backwards = false;
    while (performance.now() < until) {
      const started = performance.now();
      const { body } = await pool.request({
        method: "POST",
        path: `/${BENCH_KEY}`,
        headers: { host: "eth.bench.localhost", "content-type": "application/json" },
        body: BODY,
      });
      const head = Number((JSON.parse(await body.text()) as { result: string }).result);
      latencies.push(performance.now() - started);
      if (head < last) {
        regressions++;
        backwards = true;
      }
      last = Math.max(last, head);
    }
    if (backwards) clientsBackwards++;
  };
  await Promise.all(Array.from({ length: CLIENTS }, client));
  await pool.close();
  await Promise.all([gateway.stop(), a.target.stop(), b.target.stop()]);
  bench.progress(`two nodes, ${name}`);
  return {
    name,
    requests: latencies.length,
    regressions,
    clientsBackwards,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    rps: latencies.length / seconds,
  };
}
