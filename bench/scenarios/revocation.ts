// How soon a revoked key is refused everywhere: the control plane in this process on a fresh PostgreSQL
// database, three proxies that LISTEN for its changes, and per round a key issued, seen served by all
// three, revoked, and polled on all three at once until the last of them answers 401.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import pg from "pg";
import { request } from "undici";
import { networkCodes } from "../../generated/endpoints.js";
import { DEFAULT_ACCOUNTS } from "../../src/config/defaults.js";
import { createControlPlane } from "../../src/control/plane.js";
import { createLogger } from "../../src/log.js";
import { BENCH_DOMAIN } from "../gateway-config.js";
import type { Target } from "../load.js";
import type { Bench, Scenario } from "../scenario.js";
import { percentile } from "../stats.js";

const SERVER = "postgres://postgres@127.0.0.1:5432";
const PROXIES = 3;
/** A proxy that has not caught up by then never will: the round is counted as missed, not waited on. */
const GIVE_UP_MS = 2_000;
const BODY = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';

export const revocation: Scenario = {
  name: "revocation latency",
  async run(bench) {
    let database: string;
    try {
      database = await createDatabase();
    } catch (error) {
      const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      return { rows: [], checks: [], notes: [`revocation latency skipped: PostgreSQL at ${SERVER}: ${why}`] };
    }
    try {
      return await measure(bench, database);
    } finally {
      await onServer(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    }
  },
};

async function measure(bench: Bench, database: string) {
  const { launcher, node } = bench;
  const accounts = {
    ...DEFAULT_ACCOUNTS,
    database: `${SERVER}/${database}`,
    listen: { host: "127.0.0.1", port: 0 },
    mail: { from: "bench@example.com", outbox: join(launcher.dir, "outbox") },
  };
  // The control plane first: it creates the schema the proxies read.
  const control = await createControlPlane({
    config: accounts,
    networks: new Set(networkCodes),
    trustedProxies: [],
    logger: createLogger("silent"),
  });
  const proxies: Target[] = [];
  try {
    const deployment = launcher.writeDeployment("revocation", {
      domain: BENCH_DOMAIN,
      listen: { host: "127.0.0.1", port: 0 },
      upstreams: { eth: [{ url: node.http, ws: node.ws }] },
      operator: null,
      log: { level: "warn", access: false },
      accounts,
    });
    for (let i = 1; i <= PROXIES; i++)
      proxies.push(await launcher.startGateway(`proxy ${i}`, { deployment }));
    bench.progress("control plane and three proxies listening");

    const account = await control.service.admin.createAccount("bench@example.com");
    const rounds = bench.quick ? 10 : 50;
    const times: number[] = [];
    let missed = 0;
    for (let round = 0; round < rounds; round++) {
      const { key, view } = await control.service.keys.issue(account.id, {
        networks: ["eth"],
        plan: "shared",
      });
      const served = await Promise.all(proxies.map((p) => answered(p, key, 200, performance.now())));
      if (served.includes(undefined))
        throw new Error(`a new key not served by all three within ${GIVE_UP_MS} ms`);
      await control.service.keys.revokeAny(view.id);
      const t0 = performance.now();
      const refused = await Promise.all(proxies.map((p) => answered(p, key, 401, t0)));
      if (refused.includes(undefined)) missed += 1;
      else times.push(Math.max(...(refused as number[])));
    }
    return report(times, missed);
  } finally {
    await Promise.all(proxies.map((p) => p.stop()));
    await control.close();
  }
}

function report(times: readonly number[], missed: number) {
  const ms = (p: number) => percentile(times, p).toFixed(1);
  const p99 = percentile(times, 99);
  const never = missed === 0 ? "" : `, ${missed} not refused by all three within ${GIVE_UP_MS} ms`;
  return {
    rows: [],
    checks: [
      {
        name: "revocation reaches every proxy: p99 ≤ 100 ms",
        pass: missed === 0 && p99 <= 100,
        measured: `${ms(99)} ms${never}`,
      },
    ],
    notes: [
      `revocation across ${PROXIES} proxies: p50 ${ms(50)} ms, p99 ${ms(99)} ms, max ${ms(100)} ms over ${times.length} revocations${never}`,
    ],
  };
}

/**
 * Calls `proxy` with `key` in a loop with no pause until it answers `status`; the time since `t0` then,
 * or undefined after GIVE_UP_MS. Three of these run at once, one per proxy, on two cores: a pause would
 * add its own length to what is measured, and a call on loopback takes well under a millisecond.
 */
async function answered(proxy: Target, key: string, status: number, t0: number): Promise<number | undefined> {
  while (performance.now() - t0 < GIVE_UP_MS) {
    const answer = await request(`http://127.0.0.1:${proxy.port}/${key}/`, {
      method: "POST",
      headers: { host: `eth.${BENCH_DOMAIN}`, "content-type": "application/json" },
      body: BODY,
    });
    await answer.body.dump();
    if (answer.statusCode === status) return performance.now() - t0;
  }
  return undefined;
}

/** A database of the run's own on the machine's server, so no earlier run's keys or accounts are in it. */
async function createDatabase(): Promise<string> {
  const name = `gw_bench_${process.pid}_${randomBytes(4).toString("hex")}`;
  await onServer(`CREATE DATABASE "${name}"`);
  return name;
}

async function onServer(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: `${SERVER}/test`, connectionTimeoutMillis: 2_000 });
  // a server that goes away while connected emits this; without a listener it would end the bench
  client.on("error", () => {});
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end().catch(() => {});
  }
}
