import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import pg from "pg";

/**
 * The machine's shared PostgreSQL and Redis: servers that run for every test process and that no test
 * may stop or restart (a test that needs to do that starts its own, see own-servers.ts). A suite that
 * needs them asks `needServices` first so that a machine without them skips it with a printed reason,
 * while CI (which provides them) fails instead of passing with nothing tested.
 */

export const SHARED_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/test";
export const SHARED_REDIS_URL = "redis://127.0.0.1:6379";

const HOST = "127.0.0.1";
const SHARED_POSTGRES_PORT = 5432;
const SHARED_REDIS_PORT = 6379;
/** Long enough for a loaded machine, short enough that a missing server costs a suite little. */
const PROBE_TIMEOUT_MS = 2_000;

export type Service = "postgres" | "redis";

/** Per service: undefined when it answers, else why not. */
export type ServicesAnswer = Record<Service, string | undefined>;

const SERVICE_NAMES: Record<Service, string> = { postgres: "PostgreSQL", redis: "Redis" };

/** A socket error's code (ECONNREFUSED) says more in a line than its message; other errors their message. */
function why(error: unknown): string {
  if (error instanceof Error) return (error as NodeJS.ErrnoException).code ?? error.message;
  return String(error);
}

/** Resolves once a TCP connection to `host:port` is made (and closes it); rejects with the socket error. */
export function tcpConnect(port: number, host = HOST, timeoutMs = PROBE_TIMEOUT_MS): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no connection within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.destroy();
      resolve();
    });
    socket.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** Resolves when the Redis at `host:port` answers PING with +PONG; rejects with what happened instead. */
export function pingRedis(port: number, host = HOST, timeoutMs = PROBE_TIMEOUT_MS): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    let reply = "";
    const finish = (error?: Error) => {
      clearTimeout(timer);
      socket.destroy();
      if (error === undefined) resolve();
      else reject(error);
    };
    const timer = setTimeout(() => finish(new Error(`no answer to PING within ${timeoutMs} ms`)), timeoutMs);
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.on("data", (chunk: Buffer) => {
      reply += chunk.toString();
      if (!reply.includes("\r\n")) return;
      finish(reply.startsWith("+PONG") ? undefined : new Error(`answered PING with ${reply.trim()}`));
    });
    socket.once("error", (error) => finish(error));
    // a server that closes without a line (say, one that is shutting down); after finish, a no-op
    socket.once("close", () => finish(new Error("closed the connection without answering PING")));
  });
}

/** Resolves when the PostgreSQL at `url` runs SELECT 1; rejects with its error. */
export async function selectOne(url: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<void> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
  });
  // a server that goes away while connected emits this; without a listener it would crash the process
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT 1");
  } finally {
    await client.end().catch(() => {});
  }
}

async function postgresProblem(): Promise<string | undefined> {
  const where = `PostgreSQL on ${HOST}:${SHARED_POSTGRES_PORT}`;
  try {
    await tcpConnect(SHARED_POSTGRES_PORT);
  } catch (error) {
    return `${where} does not answer: ${why(error)}`;
  }
  try {
    await selectOne(SHARED_POSTGRES_URL);
  } catch (error) {
    return `${where} accepts connections but not SELECT 1 as ${SHARED_POSTGRES_URL}: ${why(error)}`;
  }
  return undefined;
}

async function redisProblem(): Promise<string | undefined> {
  const where = `Redis on ${HOST}:${SHARED_REDIS_PORT}`;
  try {
    await tcpConnect(SHARED_REDIS_PORT);
  } catch (error) {
    return `${where} does not answer: ${why(error)}`;
  }
  try {
    await pingRedis(SHARED_REDIS_PORT);
  } catch (error) {
    return `${where} accepts connections but not PING: ${why(error)}`;
  }
  return undefined;
}

/** Asks the shared servers now, without the cache: for a test that checks they still answer. */
export async function probeServices(): Promise<ServicesAnswer> {
  const [postgres, redis] = await Promise.all([postgresProblem(), redisProblem()]);
  return { postgres, redis };
}

let answer: Promise<ServicesAnswer> | undefined;

/** Whether the shared servers answer, asked once per process: every suite that asks gets the same answer. */
export function servicesAnswer(): Promise<ServicesAnswer> {
  answer ??= probeServices();
  return answer;
}

/**
 * Skip or fail for the given problems (one per group of suites): none is `{ skip: false }`; under CI it
 * throws, since a CI run that skips the suites would pass with nothing tested; elsewhere it prints one line
 * per problem to stderr, so that a skip is never silent, and returns `{ skip: true }`.
 */
export function skipUnlessCi(problems: readonly { suites: string; reason: string }[]): {
  skip: boolean;
  reason: string;
} {
  if (problems.length === 0) return { skip: false, reason: "" };
  const reason = problems.map((p) => p.reason).join("; ");
  if (process.env.CI === "true") {
    const suites = problems.map((p) => p.suites).join(" and ");
    throw new Error(`the ${suites} suites cannot be skipped under CI (CI=true): ${reason}`);
  }
  for (const p of problems) process.stderr.write(`skipping the ${p.suites} suites: ${p.reason}\n`);
  return { skip: true, reason };
}

/**
 * Whether the suites that need these shared servers run: `describe.skipIf((await needServices("postgres")).skip)`.
 */
export async function needServices(...which: Service[]): Promise<{ skip: boolean; reason: string }> {
  const answered = await servicesAnswer();
  const problems: { suites: string; reason: string }[] = [];
  for (const service of new Set(which)) {
    const reason = answered[service];
    if (reason !== undefined) problems.push({ suites: SERVICE_NAMES[service], reason });
  }
  return skipUnlessCi(problems);
}

let databases = 0;

/** An identifier PostgreSQL takes as is: the names here are lower case, digits and underscores only. */
function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Runs `statements` in order on the shared server's `test` database, on one connection. */
async function onSharedServer(statements: readonly { text: string; values?: unknown[] }[]): Promise<void> {
  const client = new pg.Client({ connectionString: SHARED_POSTGRES_URL, connectionTimeoutMillis: 2_000 });
  client.on("error", () => {});
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement.text, statement.values);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * A new, empty database on the shared server, for one suite: suites in parallel processes never see each
 * other's tables. `drop()` removes it even while connections to it are still open.
 */
export async function freshPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  databases += 1;
  // pid and counter keep names apart within a machine's run; the random part across runs that leave some
  const name = `gw_test_${process.pid}_${databases}_${randomBytes(4).toString("hex")}`;
  await onSharedServer([{ text: `CREATE DATABASE ${quoteIdentifier(name)}` }]);
  return {
    url: `postgres://postgres@${HOST}:${SHARED_POSTGRES_PORT}/${name}`,
    drop: () =>
      onSharedServer([
        // the suite's leftover connections would block the drop (WITH (FORCE), from PostgreSQL 13, ends them too)
        {
          text: "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
          values: [name],
        },
        { text: `DROP DATABASE IF EXISTS ${quoteIdentifier(name)} WITH (FORCE)` },
      ]),
  };
}
