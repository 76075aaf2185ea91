import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../registry/helpers.js";
import { adminHere } from "../support/admin-here.js";
import { bundleOf } from "../support/bundles.js";
import { eventually } from "../support/eventually.js";
import { KEYS, TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { parseExposition } from "../support/prometheus-text.js";

// A proxy with two workers (src/proxy/cluster.ts), as an operator meets it: a worker killed with SIGKILL
// is logged with its signal and started again, counted in gateway_worker_restarts_total, and the summed
// counters never go backwards; a worker stopped with SIGSTOP is reported as silent within the operator
// API's deadline (and the operator CLI's list) while the other's answers are served; and the primary survives questions sent to
// workers as they die.

const DOMAIN = "gw.test";
/** How long a stop stays not ready while the public port still serves (docs/operations.md, "Probes"). */
const SHUTDOWN_DELAY_MS = 2_000;

interface Upstreams {
  processes: {
    pid: number;
    silent?: string;
    labels: { label: string; upstreams: { name: string; state: string }[] }[];
  }[];
}

describe("a proxy's workers", () => {
  let node: LoopbackNode;
  let child: ChildProcess;
  let dir: string;
  let port = 0;
  let operatorPort = 0;
  const logs: string[] = [];

  const operator = async (path: string) => {
    const r = await request(`http://127.0.0.1:${operatorPort}${path}`, { headersTimeout: 10_000 });
    return { status: r.statusCode, text: await r.body.text() };
  };
  const pids = async () =>
    (JSON.parse((await operator("/upstreams")).text) as Upstreams).processes.map((p) => p.pid);
  const requests = async () => {
    const metrics = parseExposition((await operator("/metrics")).text);
    return metrics.samples
      .filter((s) => s.name === "gateway_requests_total")
      .reduce((sum, s) => sum + s.value, 0);
  };
  const series = async (name: string) =>
    parseExposition((await operator("/metrics")).text).samples.find((s) => s.name === name)?.value;
  /** Calls on new connections, so both workers take some. */
  const calls = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const r = await request(`http://127.0.0.1:${port}/${KEYS.all}/`, {
        method: "POST",
        headers: { host: `eth.${DOMAIN}`, "content-type": "application/json", connection: "close" },
        body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
      });
      await r.body.text();
      expect(r.statusCode).toBe(200);
    }
  };

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    dir = mkdtempSync(join(tmpdir(), "gateway-workers-"));
    const config = join(dir, "deployment.yaml");
    writeFileSync(
      config,
      [
        `domain: ${DOMAIN}`,
        "listen: { host: 127.0.0.1, port: 0 }",
        "operator: { listen: { host: 127.0.0.1, port: 0 } }",
        "workers: 2",
        `upstreams: { eth: ["${node.url}"] }`,
        "health: { probeIntervalMs: 0 }",
        `limits: { shutdownDelayMs: ${SHUTDOWN_DELAY_MS} }`,
        "log: { level: info, access: false }",
        `keys: [{ key: ${TEST_KEYS[0]?.key}, networks: "*" }]`,
      ].join("\n"),
    );
    child = spawn(process.execPath, [await bundleOf("src/proxy/main.ts")], {
      cwd: ROOT,
      env: { ...process.env, GATEWAY_CONFIG: config },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let pending = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      logs.push(...lines);
    });
    await eventually(() => logs.some((l) => l.includes('"msg":"gateway listening"')), 30_000, "listening");
    const line = JSON.parse(logs.find((l) => l.includes('"msg":"gateway listening"')) as string);
    ({ port, operatorPort } = line as { port: number; operatorPort: number });
  });
  afterAll(async () => {
    if (child?.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    await node?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /** The state of eth's upstream in each process. */
  const ethStates = async () =>
    (JSON.parse((await operator("/upstreams")).text) as Upstreams).processes.map(
      (p) => p.labels.find((l) => l.label === "eth")?.upstreams[0]?.state,
    );
  const cordon = async (path: "/upstreams/cordon" | "/upstreams/uncordon", upstream: string) => {
    const r = await request(`http://127.0.0.1:${operatorPort}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ label: "eth", upstream }),
    });
    await r.body.text();
    expect(r.statusCode).toBe(200);
  };

  it("a worker's log lines say which worker wrote them", async () => {
    const cordon = (path: string) =>
      request(`http://127.0.0.1:${operatorPort}/upstreams/${path}`, {
        method: "POST",
        body: JSON.stringify({ label: "eth", upstream: node.url }),
        headers: { "content-type": "application/json" },
      }).then((r) => r.body.text());
    await cordon("cordon");
    const workersOf = () =>
      new Set(
        logs
          .filter((l) => l.includes('"msg":"upstream state"') && l.includes('"to":"cordoned"'))
          .map((l) => (JSON.parse(l) as { worker?: number }).worker),
      );
    try {
      await eventually(() => workersOf().size === 2, 5_000, "each worker's line");
      expect([...workersOf()].every((worker) => typeof worker === "number")).toBe(true);
    } finally {
      await cordon("uncordon");
    }
  });

  it("a worker killed with SIGKILL is logged with its signal, started again and counted; sums never go back", async () => {
    await calls(20);
    const before = await requests();
    expect(before).toBe(20);
    // an operator's cordon, which the new worker must keep as its peers do
    const report = JSON.parse((await operator("/upstreams")).text) as Upstreams;
    const name = report.processes[0]?.labels.find((l) => l.label === "eth")?.upstreams[0]?.name as string;
    await cordon("/upstreams/cordon", name);
    expect(await ethStates()).toEqual(["cordoned", "cordoned"]);
    const [victim, survivor] = await pids();
    process.kill(victim as number, "SIGKILL");
    await eventually(() => logs.some((l) => l.includes('"msg":"worker exited"')), 5_000, "the exit logged");
    const exited = JSON.parse(logs.find((l) => l.includes('"msg":"worker exited"')) as string);
    expect(exited).toMatchObject({ level: "error", signal: "SIGKILL", pid: victim });
    // replaced: two workers again, the survivor and a new one
    await eventually(
      async () => {
        const now = await pids();
        return now.length === 2 && now.includes(survivor as number) && !now.includes(victim as number);
      },
      10_000,
      "a new worker in place of the killed one",
    );
    await eventually(
      async () => (await ethStates()).every((state) => state === "cordoned"),
      // a new worker starts whole (its bundle, its probes) before it answers: seconds on a loaded host
      15_000,
      "the new worker keeps the cordon",
    );
    await cordon("/upstreams/uncordon", name);
    expect(await ethStates()).toEqual(["healthy", "healthy"]);
    expect(await series("gateway_worker_restarts_total")).toBe(1);
    expect(await series("gateway_workers_alive")).toBe(2);
    expect(await series("gateway_workers_configured")).toBe(2);
    // the killed worker's counts are kept: the sum is where it was, then grows
    expect(await requests()).toBeGreaterThanOrEqual(before);
    await calls(10);
    expect(await requests()).toBeGreaterThanOrEqual(before + 10);
    await eventually(async () => (await operator("/readyz")).status === 200, 5_000, "ready again");
  });

  it("a stopped worker is reported as silent within the deadline, and the other's answers are served", async () => {
    const counted = await requests();
    const [stopped] = await pids();
    process.kill(stopped as number, "SIGSTOP");
    try {
      const started = performance.now();
      const ready = await operator("/readyz");
      expect(performance.now() - started).toBeLessThan(3_000);
      expect(ready.status).toBe(503);
      expect(JSON.parse(ready.text).reasons).toContainEqual(
        expect.stringMatching(/did not answer within 1000 ms/),
      );
      const upstreams = JSON.parse((await operator("/upstreams")).text) as Upstreams;
      expect(upstreams.processes).toHaveLength(2);
      expect(upstreams.processes.find((p) => p.pid === stopped)?.silent).toMatch(/did not answer/);
      expect(upstreams.processes.find((p) => p.pid !== stopped)?.labels).toHaveLength(1);
      // the operator CLI's list says so too, rather than print the stopped worker's pid over nothing
      const listed = await adminHere(
        { GATEWAY_CONFIG: "" },
        "upstreams",
        "list",
        "--proxy",
        `http://127.0.0.1:${operatorPort}`,
      );
      expect(listed.code).toBe(0);
      expect(listed.out).toMatch(new RegExp(`process ${stopped}\\b.*did not answer within 1000 ms`));
      const metrics = await operator("/metrics");
      expect(metrics.status).toBe(200);
      expect(await requests()).toBeGreaterThanOrEqual(counted);
    } finally {
      process.kill(stopped as number, "SIGCONT");
    }
    await eventually(
      async () => (await operator("/readyz")).status === 200,
      15_000,
      "ready once it runs again",
    );
  });

  it("the primary lives through questions to workers that die as they are asked", async () => {
    const primary = child.pid as number;
    for (let round = 0; round < 3; round++) {
      const [victim] = await pids();
      const asking = Array.from({ length: 20 }, (_, i) =>
        operator(["/readyz", "/metrics", "/upstreams"][i % 3] as string).catch(() => undefined),
      );
      process.kill(victim as number, "SIGKILL");
      await Promise.all(asking);
      await eventually(async () => (await pids()).length === 2, 15_000, "the worker replaced");
    }
    expect(child.exitCode).toBeNull();
    expect(() => process.kill(primary, 0)).not.toThrow();
    expect((await operator("/healthz")).status).toBe(200);
    expect(logs.filter((l) => l.includes("ERR_IPC_CHANNEL_CLOSED"))).toEqual([]);
  });

  // Last: it stops the proxy. The primary waits the shutdown delay and then stops its workers, which
  // waited it again before their listener closed: twice the delay, past the grace an operator sized from
  // the documented sum of the delay and the drain. So did a worker started in place of a dead one that
  // was still starting when the stop began: the news of the stop reached it before it listened for it.
  it("a SIGTERM closes the public listener once the shutdown delay has passed, not twice it, with a worker still starting", async () => {
    // both workers serve first: the one killed must not be the only one that does
    const answering = async () =>
      (JSON.parse((await operator("/upstreams")).text) as Upstreams).processes.filter(
        (p) => p.silent === undefined,
      ).length;
    await eventually(async () => (await answering()) === 2, 15_000, "both workers answering");
    // the primary's children: its workers (and, run from source, the loader's esbuild service)
    const before = childPids(child.pid as number);
    const logged = logs.length;
    process.kill((await pids())[0] as number, "SIGKILL");
    // the earlier tests' deaths leave a backoff of some seconds before the next fork
    let restarting: { inMs: number } | undefined;
    await eventually(
      () => {
        const line = logs.slice(logged).find((l) => l.includes('"msg":"worker restarting"'));
        restarting = line === undefined ? undefined : JSON.parse(line);
        return restarting !== undefined;
      },
      10_000,
      "the killed worker's restart logged",
    );
    await eventually(
      () => childPids(child.pid as number).some((pid) => !before.includes(pid)),
      (restarting?.inMs ?? 0) + 10_000,
      "a worker forked in place of the killed one",
    );
    const accepts = () =>
      request(`http://127.0.0.1:${port}/${KEYS.all}/`, {
        method: "POST",
        headers: { host: `eth.${DOMAIN}`, "content-type": "application/json", connection: "close" },
        body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
      }).then(
        async (r) => {
          await r.body.text();
          return true;
        },
        // refused: the listener is closed; any other failure (a busy machine's reset) says nothing yet
        (error: { code?: string }) => (error.code === "ECONNREFUSED" ? false : undefined),
      );
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const started = performance.now();
    child.kill("SIGTERM");
    let lastAccepted = 0;
    await eventually(
      async () => {
        const accepted = await accepts();
        if (accepted === false) return true;
        if (accepted === true) lastAccepted = performance.now() - started;
        return false;
      },
      4 * SHUTDOWN_DELAY_MS,
      "the public listener closed",
    );
    expect(lastAccepted).toBeGreaterThan(SHUTDOWN_DELAY_MS * 0.8);
    expect(lastAccepted).toBeLessThan(SHUTDOWN_DELAY_MS * 1.5);
    await exited;
  });
});

/** The processes whose parent is `parent`, from /proc: a worker forked but not yet answering its primary. */
function childPids(parent: number): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        // pid (comm) state ppid ...: comm may hold spaces, so the fields after its closing parenthesis
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === parent;
      } catch {
        return false; // gone since the listing
      }
    })
    .map(Number);
}
