// Whether a request can leave something behind: one gateway on the bench's deployment serves phases of
// calls that each vary what a caller controls (the key, the request id, the method, the host, the call's
// id and params, a REST path), and after each phase its V8 heap is read after a full collection. What a
// request leaves behind grows that reading phase after phase; caches and tables with a bound do not.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { Pool } from "undici";
import { BENCH_DOMAIN, BENCH_KEY } from "../gateway-config.js";
import { heapFile } from "../heap-on-signal.js";
import { compiled } from "../launcher.js";
import { type Target, untilAnswering } from "../load.js";
import type { Scenario } from "../scenario.js";

interface Call {
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly host: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
}

const rpc = (method: string, params: unknown[] = [], id: unknown = 1) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params });
const hex = (i: number, digits: number) => i.toString(16).padStart(digits, "0");
const eth = (body: string, path = `/${BENCH_KEY}`, headers?: Record<string, string>): Call => ({
  method: "POST",
  path,
  host: `eth.${BENCH_DOMAIN}`,
  body,
  ...(headers === undefined ? {} : { headers }),
});

/** Each phase's calls, the i-th of a run; each phase varies one thing a caller chooses. */
const PHASES: readonly { name: string; call: (i: number) => Call }[] = [
  { name: "plain calls", call: () => eth(rpc("eth_blockNumber")) },
  { name: "plain calls again", call: () => eth(rpc("eth_blockNumber")) },
  { name: "unknown keys", call: (i) => eth(rpc("eth_blockNumber"), `/FNunknown${hex(i, 24)}`) },
  {
    name: "distinct X-Request-Id",
    call: (i) => eth(rpc("eth_blockNumber"), undefined, { "x-request-id": `bench-${hex(i, 16)}` }),
  },
  { name: "unknown methods", call: (i) => eth(rpc(`eth_unknown${i}`)) },
  {
    name: "unknown hosts",
    call: (i) => ({ ...eth(rpc("eth_blockNumber")), host: `n${i}.${BENCH_DOMAIN}` }),
  },
  {
    name: "distinct ids and addresses",
    call: (i) => eth(rpc("eth_getBalance", [`0x${hex(i, 40)}`, "latest"], `id-${i}`)),
  },
  {
    name: "distinct REST paths",
    call: (i) => ({
      method: "GET",
      path: `/${BENCH_KEY}/v2/accounts/A${hex(i, 20)}`,
      host: `algo.${BENCH_DOMAIN}`,
    }),
  },
  { name: "plain calls, last", call: () => eth(rpc("eth_blockNumber")) },
];

/** Calls per phase; `--quick` sends a quarter, a smoke test rather than a measure of small leaks. */
const CALLS = 40_000;
const CONNECTIONS = 32;
/** What the heap may grow by from the second phase to the last: 280,000 calls leaving 11 bytes each. */
const GROWTH_LIMIT = 3 * 2 ** 20;

export const memory: Scenario = {
  name: "memory",
  async run(bench) {
    const gateway = await bench.launcher.startGateway("gateway", {
      deployment: bench.deployment,
      // a relative path, which `--import` would take for a package's name without its `./`
      nodeArgs: ["--expose-gc", "--import", `./${compiled("heap-on-signal.ts")[0]}`],
    });
    await untilAnswering(gateway);
    const calls = bench.quick ? CALLS / 4 : CALLS;
    const readings: { phase: string; heap: number; statuses: string }[] = [];
    try {
      for (const phase of PHASES) {
        const statuses = await drive(gateway, phase.call, calls);
        readings.push({ phase: phase.name, heap: await heapAfterCollection(gateway), statuses });
        bench.progress(`memory: ${phase.name}`);
      }
    } finally {
      await gateway.stop();
      rmSync(heapFile(gateway.child.pid as number), { force: true });
    }
    const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
    const second = readings[1]?.heap ?? 0;
    const last = readings[readings.length - 1]?.heap ?? 0;
    return {
      rows: [],
      checks: [
        {
          name: `memory: the heap after a full GC grows < ${mb(GROWTH_LIMIT)} MB over ${PHASES.length - 2} phases of ${calls} calls with distinct inputs`,
          pass: last - second < GROWTH_LIMIT,
          measured: `${mb(second)} → ${mb(last)} MB`,
        },
      ],
      notes: [
        `memory: heap after a full GC, phase by phase: ${readings.map((r) => `${r.phase} ${mb(r.heap)} MB (${r.statuses})`).join("; ")}`,
      ],
    };
  },
};

/** Sends the phase's calls over CONNECTIONS connections; answers their statuses and counts. */
async function drive(gateway: Target, call: (i: number) => Call, calls: number): Promise<string> {
  const pool = new Pool(`http://127.0.0.1:${gateway.port}`, { connections: CONNECTIONS });
  const statuses = new Map<number, number>();
  let next = 0;
  const worker = async () => {
    while (next < calls) {
      const { method, path, host, headers, body } = call(next++);
      const answer = await pool.request({
        method,
        path,
        headers: { host, "content-type": "application/json", ...headers },
        ...(body === undefined ? {} : { body }),
      });
      await answer.body.dump();
      statuses.set(answer.statusCode, (statuses.get(answer.statusCode) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  await pool.close();
  return [...statuses].map(([status, count]) => `${count} × ${status}`).join(", ");
}

/** Asks the gateway for a reading (heap-on-signal.ts) and waits for it. */
async function heapAfterCollection(gateway: Target): Promise<number> {
  const file = heapFile(gateway.child.pid as number);
  const before = existsSync(file) ? readFileSync(file, "utf8").split("\n").length : 1;
  gateway.child.kill("SIGUSR2");
  for (let tries = 0; tries < 100; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    if (!existsSync(file)) continue;
    const lines = readFileSync(file, "utf8").split("\n");
    if (lines.length > before)
      return (JSON.parse(lines[lines.length - 2] as string) as { heapUsed: number }).heapUsed;
  }
  throw new Error("the gateway gave no heap reading in 5 s: was it started with heap-on-signal?");
}
