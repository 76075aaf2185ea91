// The cost of sharing rate limits and quotas through Redis: the gateway with in-process token buckets and
// quota counts (the default) and with `sharedLimits` on the machine's Redis, next to the Node floor, in one run. Leasing takes no
// Redis round trip on a request's path, so the two should serve alike; the check says whether they do.
import { connect } from "node:net";
import { compare, summarise } from "../compare.js";
import { BENCH_KEY_SPEC, BENCH_LABELS, BENCH_PLAN, benchConfig } from "../gateway-config.js";
import { compiled } from "../launcher.js";
import type { Check, Row } from "../report.js";
import type { Scenario } from "../scenario.js";
import { pairedRatio } from "../stats.js";
import { SMALL_CALL_50 } from "../workloads.js";

const REDIS = { host: "127.0.0.1", port: 6379 };
const LOCAL = "gateway, local limits";
const SHARED = "gateway, shared limits";

export const sharedLimits: Scenario = {
  name: "shared limits",
  async run(bench) {
    const problem = await redisProblem();
    if (problem !== undefined) return { rows: [], checks: [], notes: [`shared limits skipped: ${problem}`] };
    const { launcher, node } = bench;
    const config = {
      ...benchConfig({ http: node.http, ws: node.ws, labels: BENCH_LABELS, twice: ["eth"] }),
      // A rate the load cannot reach but whose leases (leaseMs of it: 10,000 tokens) run out about once a
      // second, so the shared gateway leases from Redis during every round and not only at its start.
      keys: [{ ...BENCH_KEY_SPEC, rate: { perSecond: 1e5, burst: 1e5 } }],
      // and the same for the plan's compute units (10 a call): its quota's leases (leaseMs of its rate,
      // 100,000 units) run out about once a second too, so quotas are counted in Redis during every round
      plans: { bench: { ...BENCH_PLAN, computeUnitRate: { perSecond: 1e6, burst: 1e6 } } },
    };
    const local = await launcher.startGateway(LOCAL, {
      deployment: launcher.writeDeployment("limits-local", config),
    });
    const shared = await launcher.startGateway(SHARED, {
      deployment: launcher.writeDeployment("limits-shared", {
        ...config,
        sharedLimits: { redis: `redis://${REDIS.host}:${REDIS.port}`, leaseMs: 100, fallbackShare: 1 },
      }),
    });
    const floor = await launcher.start("Node floor", compiled("targets/floor.ts"), {
      BENCH_UPSTREAM: node.http,
    });
    bench.progress("local and shared limits listening");
    const samples = await compare(SMALL_CALL_50, [floor, local, shared], {
      rounds: bench.quick ? 2 : 10,
      seconds: bench.roundSeconds,
      upstream: node.target,
    });
    await Promise.all([local.stop(), shared.stop(), floor.stop()]);
    const rows = summarise(`limits, ${SMALL_CALL_50.name}`, samples, floor.name);
    return { rows, ...judge(rows) };
  },
};

/** Shared against local paired by round, the one question here; each against the floor as a NOTE. */
function judge(rows: readonly Row[]): { checks: Check[]; notes: string[] } {
  const local = rows.find((r) => r.target === LOCAL);
  const shared = rows.find((r) => r.target === SHARED);
  if (local === undefined || shared === undefined) return { checks: [], notes: [] };
  const ratio = pairedRatio(shared.roundRps, local.roundRps);
  return {
    checks: [
      {
        name: "shared limits and quotas: throughput ≥ 0.9× local limits and quotas",
        pass: ratio >= 0.9,
        measured: `${ratio.toFixed(2)}× (shared ${shared.cpuMicros.toFixed(1)} µs, local ${local.cpuMicros.toFixed(1)} µs CPU per request)`,
      },
    ],
    notes: [
      `limits: against the Node floor, shared ${shared.floorRatio?.toFixed(3)}×, local ${local.floorRatio?.toFixed(3)}× its throughput`,
    ],
  };
}

/** Undefined when Redis answers PING with PONG, else why not: a skipped scenario says why. */
function redisProblem(timeoutMs = 2_000): Promise<string | undefined> {
  const where = `Redis on ${REDIS.host}:${REDIS.port}`;
  return new Promise((resolve) => {
    const socket = connect(REDIS);
    let reply = "";
    const finish = (problem: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(problem);
    };
    const timer = setTimeout(() => finish(`${where} did not answer PING within ${timeoutMs} ms`), timeoutMs);
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.on("data", (chunk: Buffer) => {
      reply += chunk.toString();
      if (reply.includes("\r\n"))
        finish(reply.startsWith("+PONG") ? undefined : `${where} answered PING with ${reply.trim()}`);
    });
    socket.once("error", (error: NodeJS.ErrnoException) =>
      finish(`${where}: ${error.code ?? error.message}`),
    );
    // a server that closes without a line; after finish, resolve is a no-op
    socket.once("close", () => finish(`${where} closed the connection without answering PING`));
  });
}
