import { type ChildProcess, spawn } from "node:child_process";
import { openSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { GATEWAY_V8_FLAGS } from "../src/v8-flags.js";

export { freePort } from "../src/dev/free-port.js";

export interface Running {
  readonly name: string;
  readonly port: number;
  readonly child: ChildProcess;
  /** Resident memory of the process and its children (cluster workers), in bytes. */
  rss(): number;
  /** CPU time (user and system) the process and its live children have used so far, in seconds. */
  cpu(): number;
  stop(): Promise<void>;
}

/** Starts a TypeScript or JavaScript entry in its own process and waits until `port` accepts connections. */
export async function start(
  name: string,
  entry: readonly string[],
  env: Record<string, string>,
  port: number,
  root: string,
  /** Rewrites the command line, say to start it inside a CPU budget (cpu-budget.ts). */
  wrap: (argv: readonly string[]) => readonly string[] = (argv) => argv,
): Promise<Running> {
  // Output goes to /dev/null: a file write per log line, as in production, with nothing read back here.
  const sink = openSync("/dev/null", "w");
  // Every process runs with the V8 settings the gateway sets for itself (importing them set them for this
  // load-generating process too), so that the floor and the other proxies are compared on the same
  // runtime; BENCH_NODE_ARGS adds more for all alike (NODE_OPTIONS refuses most V8 flags).
  const extra = [...GATEWAY_V8_FLAGS, ...(process.env.BENCH_NODE_ARGS?.split(" ").filter(Boolean) ?? [])];
  const [command, ...args] = wrap([process.execPath, ...extra, ...entry]) as [string, ...string[]];
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", sink, sink],
  });
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code) => reject(new Error(`${name} exited with ${code} before listening`))),
  );
  exited.catch(() => {});
  await Promise.race([waitForPort(port, 20_000), exited]);
  return {
    name,
    port,
    child,
    rss: () => treeRss(child.pid as number),
    cpu: () => treeCpu(child.pid as number),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        // A process held with SIGSTOP (a node made to hang) takes the SIGTERM only once it runs again.
        child.kill("SIGCONT");
      }),
  };
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => resolve(true)).once("error", () => resolve(false));
      setTimeout(() => resolve(false), 500).unref();
    }).then((ok) => ok);
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nothing listening on ${port} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function treeRss(pid: number): number {
  let total = 0;
  for (const id of [pid, ...children(pid)]) {
    try {
      const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${id}/status`, "utf8"));
      total += match ? Number(match[1]) * 1024 : 0;
    } catch {
      // the process ended between listing and reading
    }
  }
  return total;
}

const TICKS_PER_SECOND = 100; // USER_HZ, 100 on every Linux this runs on

/** utime + stime from /proc/<pid>/stat (fields 14 and 15, counted after the parenthesised name). */
function treeCpu(pid: number): number {
  let ticks = 0;
  for (const id of [pid, ...children(pid)]) {
    try {
      const stat = readFileSync(`/proc/${id}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // the process ended between listing and reading
    }
  }
  return ticks / TICKS_PER_SECOND;
}

function children(pid: number): number[] {
  try {
    const direct = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
    return direct.flatMap((child) => [child, ...children(child)]);
  } catch {
    return [];
  }
}

/** Samples a process tree's RSS until stopped; returns the peak. */
export function samplePeakRss(target: Running, everyMs = 100): () => number {
  let peak = target.rss();
  const timer = setInterval(() => {
    peak = Math.max(peak, target.rss());
  }, everyMs);
  return () => {
    clearInterval(timer);
    return Math.max(peak, target.rss());
  };
}
