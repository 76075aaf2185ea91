import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControlPlane } from "../../src/control/plane.js";
import { eventually } from "../support/eventually.js";
import {
  type FleetProxy,
  startFleetControlPlane,
  startFleetProxy,
  stopFleetProxy,
  writeFleetConfig,
} from "../support/fleet.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { needOwnServerBinaries, type OwnPostgres, startOwnPostgres } from "../support/own-servers.js";

// What a customer saw: calls billed twice after PostgreSQL stalled (its host paused) or a usage write waited
// behind another session's lock for longer than the proxy's 10 s query timeout. The proxy gave up on the
// write and sent its counts again with the next flush, while the server, once it went on, committed the first
// write too. Each flush is now a batch under an id the store records in the same transaction, sent again
// under that id until the store has taken it. The server here is this suite's own (its own free port and
// folder): the test pauses its processes (SIGSTOP, by PID: the postmaster and its children) and lets them go
// on (SIGCONT).

const binaries = needOwnServerBinaries("postgres");

/** The PIDs of this suite's PostgreSQL server: its postmaster and every process it forked. */
function serverPids(postmaster: number): number[] {
  const children = execFileSync("pgrep", ["-P", String(postmaster)], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map(Number);
  return [postmaster, ...children];
}

/** Each call is an eth_blockNumber: 10 compute units. */
const UNITS_PER_CALL = 10;
/** How long a flush's write may wait on the server (src/store/postgres.ts), and slack for a loaded machine. */
const TIMED_OUT_WITHIN_MS = 10_000 + 10_000;

describe.skipIf(binaries.skip)("usage counted once across a PostgreSQL stall", () => {
  let postgres: OwnPostgres;
  let node: LoopbackNode;
  let control: ControlPlane;
  let proxy: FleetProxy;
  let dir = "";
  let paused: number[] = [];

  const unitsOf = async (prefix: string) => {
    const today = new Date().toISOString().slice(0, 10);
    const rows = await control.store.usage([prefix], today, today);
    return rows.reduce((sum, row) => sum + row.units, 0);
  };

  /** Makes `n` calls with `key`, each answered. */
  const calls = async (key: string, n: number) => {
    for (let i = 0; i < n; i++) expect(await proxy.call(key)).toBe(200);
  };

  /** Resolves once the proxy has logged a flush whose write timed out since `seen` lines of its log. */
  const flushTimedOut = (seen: number) =>
    eventually(
      () =>
        proxy.logs
          .slice(seen)
          .some((line) => line.includes("usage counts not flushed") && line.includes("timeout")),
      TIMED_OUT_WITHIN_MS,
      "a usage flush that timed out",
    );

  /**
   * A key with 5 calls flushed; `stall` holds the store while 10 more are made and until a flush of them has
   * timed out. Then one more call, flushed after the batch that timed out was sent again: the key's units
   * once that call is in.
   */
  const billedAcross = async (email: string, stall: (during: () => Promise<void>) => Promise<void>) => {
    const accountId = (await control.service.admin.createAccount(email)).id;
    const { key } = await control.service.keys.issue(accountId, { networks: ["eth"], plan: "shared" });
    const prefix = key.slice(0, 10);
    await eventually(() => proxy.knows(key), 5_000, "the key known");
    // calls flushed as usual: the proxy's pooled connection to the store is open and idle
    await calls(key, 5);
    await eventually(
      async () => (await unitsOf(prefix)) === 5 * UNITS_PER_CALL,
      15_000,
      "the first calls flushed",
    );
    await stall(async () => {
      const seen = proxy.logs.length;
      await calls(key, 10);
      await flushTimedOut(seen);
    });
    await eventually(
      async () => (await unitsOf(prefix).catch(() => 0)) >= 15 * UNITS_PER_CALL,
      15_000,
      "the stalled calls flushed",
    );
    // a write the server went on with after the proxy gave up on it is done by the time a later batch is in
    await calls(key, 1);
    await eventually(
      async () => (await unitsOf(prefix)) >= 16 * UNITS_PER_CALL,
      15_000,
      "the last call flushed",
    );
    return unitsOf(prefix);
  };

  beforeAll(async () => {
    postgres = await startOwnPostgres();
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a" }));
    dir = mkdtempSync(join(tmpdir(), "usage-stall-"));
    control = await startFleetControlPlane(postgres.url, dir);
    proxy = await startFleetProxy(writeFleetConfig(dir, { database: postgres.url, upstream: node.url }));
  }, 60_000);

  afterAll(async () => {
    for (const pid of paused)
      try {
        process.kill(pid, "SIGCONT");
      } catch {}
    if (proxy !== undefined) await stopFleetProxy(proxy);
    await control?.close();
    await Promise.all([postgres?.close(), node?.close()]);
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  it("bills each call once when a usage flush timed out on a server that then went on", async () => {
    const units = await billedAcross("stall@example.com", async (during) => {
      // the server stalls (its host paused): its sockets stay open, nothing answers
      paused = serverPids(postgres.pid);
      for (const pid of paused) process.kill(pid, "SIGSTOP");
      try {
        await during();
      } finally {
        for (const pid of paused) process.kill(pid, "SIGCONT");
        paused = [];
      }
    });
    expect(units).toBe(16 * UNITS_PER_CALL);
  }, 90_000);

  it("bills each call once when a usage flush waited past the query timeout behind another session's lock", async () => {
    const units = await billedAcross("lock@example.com", async (during) => {
      // an operator's long transaction (a report, a migration) holds the usage table
      const admin = new pg.Client({ connectionString: postgres.url });
      await admin.connect();
      try {
        await admin.query("BEGIN");
        await admin.query("LOCK TABLE usage IN EXCLUSIVE MODE");
        await during();
        await admin.query("COMMIT");
      } finally {
        await admin.end();
      }
    });
    expect(units).toBe(16 * UNITS_PER_CALL);
  }, 90_000);
});
