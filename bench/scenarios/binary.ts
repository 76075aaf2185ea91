// The single executable (`npm run build:binary`, dist/node-gateway) against `node dist/gateway.js`, on one
// deployment: the file's size, how soon a started process serves its first request, its RSS once idle and
// its throughput and peak RSS under load. NOTE lines only: the issue asks for the numbers, not a target.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { buildBinary } from "../../scripts/build-binary.js";
import { compare } from "../compare.js";
import { BENCH_DOMAIN, BENCH_KEY, BENCH_LABELS, benchConfig } from "../gateway-config.js";
import type { Target } from "../load.js";
import { freePort, samplePeakRss } from "../processes.js";
import type { Scenario } from "../scenario.js";
import { median } from "../stats.js";
import { SMALL_CALL_50 } from "../workloads.js";

const BINARY = "dist/node-gateway";
const SCRIPT = "node dist/gateway.js";
/** The pause between two calls while a process starts. */
const POLL_MS = 3;
/** A process that serves nothing by then has failed to start. */
const GIVE_UP_MS = 30_000;
/** How long after its first answer a process's RSS is read as idle. */
const IDLE_MS = 2_000;
const BODY = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';
const MB = 2 ** 20;

/** One way to start the gateway: a name, and the command line and environment that start it. */
interface Way {
  readonly name: string;
  readonly argv: readonly string[];
  readonly env: Record<string, string>;
}

interface Start {
  readonly target: Target;
  /** From spawn to the first 200 answer, in milliseconds. */
  readonly firstMs: number;
}

export const binary: Scenario = {
  name: "binary",
  async run(bench) {
    const { launcher, node } = bench;
    const file = await buildBinary(BINARY);
    const sizeMB = statSync(file).size / MB;
    bench.progress(`${BINARY} built`);
    // The bench's deployment on a port fixed here, so a call can go out the moment the process is spawned.
    const port = await freePort();
    const deployment = launcher.writeDeployment("binary", {
      ...benchConfig({ http: node.http, ws: node.ws, labels: BENCH_LABELS }),
      listen: { host: "127.0.0.1", port },
    });
    // Both as a user starts them, with no flag of the bench's: each sets its V8 flags itself (v8-flags.ts).
    const ways: readonly Way[] = [
      { name: BINARY, argv: [file, "--config", deployment], env: {} },
      { name: SCRIPT, argv: [process.execPath, "dist/gateway.js"], env: { GATEWAY_CONFIG: deployment } },
    ];
    const live = new Set<ChildProcess>();
    const peaks = new Map<string, () => number>();
    const killAll = () => {
      for (const child of live) child.kill("SIGKILL");
    };
    process.once("exit", killAll);
    try {
      // One call first, to the bench node, so this process's HTTP client is warm for the first start.
      await call(node.target.port, "/");
      // Starts alternate, every other pair in reverse, as compare() alternates rounds; one process at a time.
      const first = new Map<string, number[]>(ways.map((w) => [w.name, []]));
      const idle = new Map<string, number[]>(ways.map((w) => [w.name, []]));
      const starts = bench.quick ? 3 : 5;
      for (let round = 0; round < starts; round++) {
        for (const way of round % 2 === 0 ? ways : [...ways].reverse()) {
          const { target, firstMs } = await startAndCall(way, port, launcher.root, live);
          await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
          idle.get(way.name)?.push(target.rss());
          await target.stop();
          first.get(way.name)?.push(firstMs);
        }
      }
      bench.progress(`${starts} starts of each`);

      // Under load both run at once, each on a port of its own, measured in alternating rounds.
      const targets: Target[] = [];
      for (const way of ways) {
        const own = await freePort();
        const env = { ...way.env, GATEWAY_PORT: String(own) };
        const { target } = await startAndCall({ ...way, env }, own, launcher.root, live);
        targets.push(target);
        peaks.set(way.name, samplePeakRss(target));
      }
      const samples = await compare(SMALL_CALL_50, targets, {
        rounds: 3,
        seconds: bench.roundSeconds,
        upstream: node.target,
      });
      const peak = new Map([...peaks].map(([name, stop]) => [name, stop()]));
      await Promise.all(targets.map((t) => t.stop()));

      const [a, b] = ways.map((w) => w.name) as [string, string];
      const ms = (name: string) => first.get(name) ?? [];
      const rps = (name: string) => median((samples.get(name) ?? []).map((s) => s.rps));
      const cpu = (name: string) => median((samples.get(name) ?? []).map((s) => s.cpuMicros));
      const failed = (name: string) => (samples.get(name) ?? []).reduce((n, s) => n + s.failures, 0);
      const failures = failed(a) + failed(b) === 0 ? "" : `, failed ${failed(a)} vs ${failed(b)}`;
      return {
        rows: [],
        checks: [],
        notes: [
          `binary: ${a} ${sizeMB.toFixed(1)} MB; first request ${fmt(median(ms(a)))} ms median (max ${fmt(Math.max(...ms(a)))}) vs ${b} ${fmt(median(ms(b)))} ms (max ${fmt(Math.max(...ms(b)))}) over ${starts} starts each; idle RSS ${mb(median(idle.get(a) ?? []))} vs ${mb(median(idle.get(b) ?? []))} MB; under ${SMALL_CALL_50.name}: ${fmt(rps(a))} vs ${fmt(rps(b))} req/s, ${cpu(a).toFixed(1)} vs ${cpu(b).toFixed(1)} µs of CPU per request, peak RSS ${mb(peak.get(a) ?? 0)} vs ${mb(peak.get(b) ?? 0)} MB${failures}`,
        ],
      };
    } finally {
      for (const sampler of peaks.values()) sampler();
      await Promise.all([...live].map(stop));
      process.removeListener("exit", killAll);
    }
  },
};

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
const mb = (bytes: number) => Math.round(bytes / MB).toString();

/**
 * Spawns `way` and calls eth_blockNumber on `port` every POLL_MS until one answers 200; returns the
 * process and the time from spawn to that answer. The process is in `live` until it has exited.
 */
async function startAndCall(way: Way, port: number, root: string, live: Set<ChildProcess>): Promise<Start> {
  const [command, ...args] = way.argv as [string, ...string[]];
  const t0 = performance.now();
  // Output to /dev/null, as processes.ts sends every target's.
  const child = spawn(command, args, {
    cwd: root,
    // None of the bench's own GATEWAY_ settings: the deployment file and `way.env` say all.
    env: {
      ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("GATEWAY_"))),
      ...way.env,
    },
    stdio: ["ignore", "ignore", "ignore"],
  });
  live.add(child);
  child.once("exit", () => live.delete(child));
  const target: Target = {
    name: way.name,
    port,
    child,
    gateway: true,
    rss: () => vmRss(child.pid as number),
    cpu: () => cpuSeconds(child.pid as number),
    stop: () => stop(child),
  };
  try {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`${way.name} exited (${child.exitCode ?? child.signalCode}) before it answered`);
      if (performance.now() - t0 > GIVE_UP_MS)
        throw new Error(`${way.name} answered no call on port ${port} within ${GIVE_UP_MS} ms`);
      if ((await call(port)) === 200) return { target, firstMs: performance.now() - t0 };
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  } catch (error) {
    await stop(child);
    throw error;
  }
}

/** One eth_blockNumber with the bench key, on a connection of its own; its status, or 0 when refused. */
function call(port: number, path = `/${BENCH_KEY}/`): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path,
        agent: false,
        headers: { host: `eth.${BENCH_DOMAIN}`, "content-type": "application/json" },
      },
      (res) => {
        res.resume();
        res.once("end", () => resolve(res.statusCode ?? 0));
        res.once("error", () => resolve(0));
      },
    );
    req.once("error", () => resolve(0));
    req.end(BODY);
  });
}

/** SIGTERM and wait for the exit; SIGKILL when it has not drained in 10 s. */
function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const kill = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.once("exit", () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** VmRSS of one process (the gateway runs one: `workers` is 1), in bytes. */
function vmRss(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(join("/proc", String(pid), "status"), "utf8"));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** utime + stime of one process (`/proc/<pid>/stat`, all its threads), in seconds; USER_HZ is 100. */
function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(join("/proc", String(pid), "stat"), "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}
