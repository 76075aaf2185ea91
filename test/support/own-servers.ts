import { execFile, spawn } from "node:child_process";
import { accessSync, constants, existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { inject } from "vitest";
import { freePort } from "../../src/dev/free-port.js";
import { buildOnce } from "./build-once.js";
import { BUILDS } from "./global-setup.js";
import { pingRedis, selectOne, skipUnlessCi, tcpConnect } from "./services.js";

/**
 * Redis and PostgreSQL servers a test starts for itself, because it stops or restarts them: each on its own
 * free loopback port with its own folder under the temp dir, so that nothing here ever signals or writes to
 * the machine's shared servers on 5432 and 6379 (services.ts), which other test processes are using.
 */

const execFileAsync = promisify(execFile);

export interface OwnServer {
  readonly port: number;
  readonly url: string;
  /** The process this module signals to stop the server: a new one after each `start()`. */
  readonly pid: number;
  /** Stops the server (its data folder stays) and waits until its process has exited. */
  stop(): Promise<void>;
  /** Starts it again on the same port and folder, once it answers; a no-op while it runs. */
  start(): Promise<void>;
  /** Stops it if it runs and removes its folder; the object is done after this. */
  close(): Promise<void>;
}

export type OwnRedis = OwnServer;
export type OwnPostgres = OwnServer;

const HOST = "127.0.0.1";
/** A restart whose port the old process still held, or that another process took for a moment. */
const START_ATTEMPTS = 5;
/** How long a stopped server may take to exit before it is killed. */
const STOP_GRACE_MS = 10_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone: nothing to stop
  }
}

// What to do if the test process exits with servers still running: a test that fails or forgets close()
// must not leave servers behind. Each action kills only processes this module started.
const exitActions = new Set<() => void>();
let exitHookInstalled = false;

/** Runs `action` (synchronously: the process is exiting) at exit; returns the function that cancels it. */
function atExit(action: () => void): () => void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const run of exitActions) {
        try {
          run();
        } catch {
          // the others still run
        }
      }
    });
  }
  exitActions.add(action);
  return () => exitActions.delete(action);
}

/** The executable `name` in a folder of PATH, if there is one. */
function onPath(name: string): string | undefined {
  for (const folder of (process.env.PATH ?? "").split(delimiter)) {
    if (folder === "") continue;
    const candidate = join(folder, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this folder
    }
  }
  return undefined;
}

export function redisServerBinary(): string | undefined {
  return onPath("redis-server");
}

const POSTGRES_ROOT = "/usr/lib/postgresql";

/** The bin folder of the newest PostgreSQL installed the Debian way (/usr/lib/postgresql/<major>/bin). */
export function postgresBinDir(): string | undefined {
  if (!existsSync(POSTGRES_ROOT)) return undefined;
  const majors = readdirSync(POSTGRES_ROOT)
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(b) - Number(a));
  for (const major of majors) {
    const bin = join(POSTGRES_ROOT, major, "bin");
    if (existsSync(join(bin, "postgres")) && existsSync(join(bin, "initdb"))) return bin;
  }
  return undefined;
}

/** PostgreSQL refuses to run as root, so as root its binaries run as the postgres user. */
const isRoot = () => process.getuid?.() === 0;

function ownServerProblem(server: "postgres" | "redis"): string | undefined {
  if (server === "redis")
    return redisServerBinary() === undefined ? "no redis-server on the PATH" : undefined;
  if (postgresBinDir() === undefined)
    return `no PostgreSQL binaries (initdb, postgres) under ${POSTGRES_ROOT}`;
  if (isRoot() && onPath("runuser") === undefined)
    return "running as root without runuser, which runs PostgreSQL as the postgres user";
  return undefined;
}

/**
 * Whether the suites that start their own servers run: the binaries are there. Like `needServices`, a skip
 * prints its reason, and under CI it throws instead.
 */
export function needOwnServerBinaries(...which: ("postgres" | "redis")[]): { skip: boolean; reason: string } {
  const problems: { suites: string; reason: string }[] = [];
  for (const server of new Set(which)) {
    const reason = ownServerProblem(server);
    if (reason !== undefined)
      problems.push({ suites: server === "redis" ? "own Redis" : "own PostgreSQL", reason });
  }
  return skipUnlessCi(problems);
}

/** A started child process and what its output said last, for the error when it does not come up. */
interface Launched {
  readonly pid: number;
  readonly exited: Promise<void>;
  running(): boolean;
  output(): string;
}

async function launch(command: string, args: readonly string[], cwd: string): Promise<Launched> {
  const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
  const { pid } = child;
  if (pid === undefined) {
    // spawn reports a missing binary on the "error" event, and then the child has no pid
    throw await new Promise<Error>((resolve) => child.once("error", resolve));
  }
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4_000);
  };
  // read always: a server blocks once a pipe nobody reads is full
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    pid,
    exited,
    // a process killed by a signal has a signalCode and no exitCode
    running: () => child.exitCode === null && child.signalCode === null,
    output: () => output.trim(),
  };
}

/** The server's process exited before it answered: on a restart, its port was likely not free yet. */
class ExitedEarly extends Error {}

async function waitUntilAnswers(
  launched: Launched,
  answers: () => Promise<void>,
  what: string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let failure: unknown;
    const answered = await answers().then(
      () => true,
      (error: unknown) => {
        failure = error;
        return false;
      },
    );
    // an answer on the port while ours has exited came from some other process
    if (!launched.running()) throw new ExitedEarly(`${what} exited before it answered: ${launched.output()}`);
    if (answered) return;
    if (Date.now() > deadline)
      throw new Error(
        `${what} did not answer within ${timeoutMs} ms: ${String(failure)}\n${launched.output()}`,
      );
    await sleep(100);
  }
}

/** Starts with `attempt`, again (a few times) when the process exited at once: the port was briefly taken. */
async function withRetries(attempt: () => Promise<void>): Promise<void> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof ExitedEarly) || tries >= START_ATTEMPTS) throw error;
      await sleep(200 * tries);
    }
  }
}

/** Waits for `launched` to exit after a signal, killing `pids` when it takes longer than the grace. */
async function exitWithin(launched: Launched, pids: readonly number[]): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(true), STOP_GRACE_MS);
  });
  const tooLate = await Promise.race([launched.exited.then(() => false), late]);
  clearTimeout(timer);
  if (!tooLate) return;
  for (const pid of pids) killQuietly(pid, "SIGKILL");
  await launched.exited;
}

/** Waits until nothing accepts connections on `port` any more. */
async function untilPortRefuses(port: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const accepted = await tcpConnect(port, HOST, 500).then(
      () => true,
      () => false,
    );
    if (!accepted) return;
    if (Date.now() > deadline)
      throw new Error(`port ${port} still accepts connections after its server stopped`);
    await sleep(50);
  }
}

/** What differs between Redis and PostgreSQL; the rest (lifecycle, retries, cleanup) is `ownServer`'s. */
interface ServerKind {
  readonly name: string;
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  /** Starts the server's process; `ownServer` then waits until `answers` resolves. */
  launch(): Promise<Launched>;
  answers(): Promise<void>;
  readonly readyWithinMs: number;
  /** The pid to signal: the server itself, which is not always the child (runuser forks). */
  serverPid(launched: Launched): Promise<number>;
  /** Same, synchronously and best effort, for the exit hook. */
  serverPidNow(launched: Launched): number | undefined;
  readonly stopSignal: NodeJS.Signals;
}

async function ownServer(kind: ServerKind): Promise<OwnServer> {
  let live: Launched | undefined;
  let pid = 0;
  let closed = false;

  // only while the child runs: a pid file left by a server that exited names no process of ours
  const serverPidNow = (launched: Launched) => (launched.running() ? kind.serverPidNow(launched) : undefined);
  const cancelExitAction = atExit(() => {
    if (live !== undefined) {
      const server = serverPidNow(live);
      if (server !== undefined) killQuietly(server, "SIGKILL");
      killQuietly(live.pid, "SIGKILL");
    }
    rmSync(kind.dir, { recursive: true, force: true });
  });

  /** For a server that did not come up: kill it, and the child too (runuser passes SIGTERM on). */
  const abandon = async (launched: Launched) => {
    const server = serverPidNow(launched);
    if (server !== undefined) killQuietly(server, "SIGKILL");
    killQuietly(launched.pid, "SIGTERM");
    await exitWithin(launched, [launched.pid]);
  };

  const startOnce = async () => {
    const launched = await kind.launch();
    // from here on the exit hook knows it, while it comes up too
    live = launched;
    try {
      await waitUntilAnswers(launched, kind.answers, kind.name, kind.readyWithinMs);
      pid = await kind.serverPid(launched);
    } catch (error) {
      await abandon(launched);
      live = undefined;
      throw error;
    }
  };

  const stop = async () => {
    const launched = live;
    if (launched === undefined) return;
    if (launched.running()) {
      killQuietly(pid, kind.stopSignal);
      await exitWithin(launched, [pid, launched.pid]);
    }
    live = undefined;
    await untilPortRefuses(kind.port);
  };

  const start = async () => {
    if (closed) throw new Error(`${kind.name} is closed: close() ended it for good`);
    if (live?.running()) return;
    live = undefined;
    await withRetries(startOnce);
  };

  const close = async () => {
    if (closed) return;
    closed = true;
    await stop();
    await rm(kind.dir, { recursive: true, force: true });
    cancelExitAction();
  };

  try {
    await start();
  } catch (error) {
    closed = true;
    await rm(kind.dir, { recursive: true, force: true });
    cancelExitAction();
    throw error;
  }
  return {
    port: kind.port,
    url: kind.url,
    get pid() {
      return pid;
    },
    stop,
    start,
    close,
  };
}

/** A redis-server of this test's own on a free port: no persistence, its working folder under the temp dir. */
export async function startOwnRedis(): Promise<OwnRedis> {
  const binary = redisServerBinary();
  if (binary === undefined) throw new Error("no redis-server on the PATH");
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), "gw-redis-"));
  const name = `redis-server on port ${port}`;
  const args = ["--port", String(port), "--bind", HOST, "--save", "", "--appendonly", "no", "--dir", dir];
  return ownServer({
    name,
    port,
    url: `redis://${HOST}:${port}`,
    dir,
    launch: () => launch(binary, args, dir),
    // a short PING wait: something else that holds the port and never answers must not stall a retry
    answers: () => pingRedis(port, HOST, 1_000),
    readyWithinMs: 10_000,
    serverPid: async (launched) => launched.pid,
    serverPidNow: (launched) => launched.pid,
    // redis-server's clean shutdown; with --save "" it writes nothing
    stopSignal: "SIGTERM",
  });
}

/** `binary` with `args`, as the postgres user when this process is root. */
function asPostgresUser(binary: string, args: readonly string[]): [string, string[]] {
  return isRoot() ? ["runuser", ["-u", "postgres", "--", binary, ...args]] : [binary, [...args]];
}

/** The postmaster's pid: the first line of postmaster.pid, which it writes before it listens. */
function postmasterPidNow(dir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dir, "postmaster.pid"), "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

async function postmasterPid(dir: string): Promise<number> {
  const pid = postmasterPidNow(dir);
  if (pid === undefined) throw new Error(`no pid in ${join(dir, "postmaster.pid")} once the server answered`);
  return pid;
}

/** A fresh cluster in `dir`, which the postgres user must own when this process is root. */
async function initdb(bin: string, dir: string): Promise<void> {
  if (isRoot()) await execFileAsync("chown", ["-R", "postgres:postgres", dir]);
  // trust: the tests connect as postgres without a password; --no-sync: the cluster is thrown away;
  // locale C: works whatever locales the machine has
  const [command, args] = asPostgresUser(join(bin, "initdb"), [
    "-D",
    dir,
    "-A",
    "trust",
    "-U",
    "postgres",
    "--no-sync",
    "-E",
    "UTF8",
    "--locale=C",
  ]);
  // the postgres user may not be allowed into this process's working folder
  await execFileAsync(command, args, { cwd: dir });
}

/** Longer than an initdb takes on a loaded 2-core machine (about 1.3 s alone). */
const TEMPLATE_WAIT_MS = 60_000;

let template: Promise<string> | undefined;

/**
 * A fresh cluster, made by initdb once per run (in the run's folder, global-setup.ts) for every test that
 * starts a PostgreSQL of its own: each gets a copy of it, as initdb would have left it, for a fifth of
 * initdb's CPU (its bootstrap builds the catalogs and the template databases anew every time).
 */
function clusterTemplate(bin: string): Promise<string> {
  template ??= (async () => {
    const dir = join(inject("runDir"), BUILDS, "postgres-cluster");
    const cluster = join(dir, "cluster");
    await buildOnce(dir, "the PostgreSQL cluster template", TEMPLATE_WAIT_MS, async () => {
      await mkdir(cluster);
      await initdb(bin, cluster);
    });
    return cluster;
  })();
  return template;
}

/** A fresh cluster in `dir` (empty), a copy of the run's template, owned as initdb's own would be. */
async function freshCluster(bin: string, dir: string): Promise<void> {
  // -a: the postgres user's ownership and the files' modes (the server refuses a data folder others can read)
  await execFileAsync("cp", ["-a", `${await clusterTemplate(bin)}/.`, dir]);
  if (isRoot()) await execFileAsync("chown", ["postgres:postgres", dir]);
}

/**
 * A PostgreSQL cluster of this test's own on a free port, its data under the temp dir; settings that give up
 * durability for speed, since the data is thrown away. Data written before `stop()` is there after `start()`.
 */
export async function startOwnPostgres(): Promise<OwnPostgres> {
  const bin = postgresBinDir();
  if (bin === undefined) throw new Error(`no PostgreSQL binaries under ${POSTGRES_ROOT}`);
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), "gw-pg-"));
  try {
    await freshCluster(bin, dir);
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const name = `PostgreSQL on port ${port}`;
  const url = `postgres://postgres@${HOST}:${port}/postgres`;
  // the postgres binary itself rather than pg_ctl, so that this process holds the server as its child
  const [command, args] = asPostgresUser(join(bin, "postgres"), [
    ...["-D", dir, "-p", String(port)],
    ...["-c", `listen_addresses=${HOST}`, "-c", `unix_socket_directories=${dir}`],
    ...["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
  ]);
  return ownServer({
    name,
    port,
    url,
    dir,
    launch: () => launch(command, args, dir),
    answers: () => selectOne(url),
    readyWithinMs: 15_000,
    // runuser forks: the child is runuser, the server its child, which names itself in postmaster.pid
    serverPid: () => postmasterPid(dir),
    serverPidNow: () => postmasterPidNow(dir),
    // "fast" shutdown: ends sessions and exits, where SIGTERM ("smart") would wait for them
    stopSignal: "SIGINT",
  });
}
