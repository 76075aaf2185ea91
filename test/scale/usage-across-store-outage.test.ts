import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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

// What a customer is billed for the calls a proxy served while PostgreSQL was down. docs/deployment.md: the
// proxies keep serving, "usage counts stay in memory and are merged into the next flush", and a proxy loses
// "nothing on a graceful stop". This suite's own PostgreSQL (it stops and starts it), one proxy process.

const binaries = needOwnServerBinaries("postgres");

/** Each call is an eth_blockNumber: 10 compute units. */
const UNITS_PER_CALL = 10;

describe.skipIf(binaries.skip)("usage served while PostgreSQL is down", () => {
  let postgres: OwnPostgres;
  let node: LoopbackNode;
  let control: ControlPlane;
  let dir = "";
  let config = "";
  const proxies: FleetProxy[] = [];

  const unitsOf = async (prefix: string) => {
    const today = new Date().toISOString().slice(0, 10);
    const rows = await control.store.usage([prefix], today, today);
    return rows.reduce((sum, row) => sum + row.units, 0);
  };

  /** A key of a new account, known to `proxy`, with `n` calls served and flushed to the store. */
  const keyWithCalls = async (proxy: FleetProxy, email: string, n: number) => {
    const accountId = (await control.service.admin.createAccount(email)).id;
    const { key } = await control.service.keys.issue(accountId, { networks: ["eth"], plan: "shared" });
    await eventually(() => proxy.knows(key), 5_000, "the key known");
    for (let i = 0; i < n; i++) expect(await proxy.call(key)).toBe(200);
    const prefix = key.slice(0, 10);
    await eventually(async () => (await unitsOf(prefix)) === n * UNITS_PER_CALL, 10_000, "calls flushed");
    return { key, prefix };
  };

  /** Stops the store and waits until `proxy` has seen it go. */
  const storeDown = async (proxy: FleetProxy) => {
    await postgres.stop();
    await eventually(async () => (await proxy.dependencyUp("account_store")) === 0, 10_000, "store down");
  };

  beforeAll(async () => {
    [postgres, node] = await Promise.all([
      startOwnPostgres(),
      startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a" })),
    ]);
    dir = mkdtempSync(join(tmpdir(), "usage-outage-"));
    control = await startFleetControlPlane(postgres.url, dir);
    config = writeFleetConfig(dir, { database: postgres.url, upstream: node.url });
  }, 60_000);

  afterAll(async () => {
    await Promise.all(proxies.map(stopFleetProxy));
    await control?.close();
    await Promise.all([postgres?.close(), node?.close()]);
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  it("adds the calls served during an outage once the store is back, each once", async () => {
    const proxy = await startFleetProxy(config);
    proxies.push(proxy);
    const { key, prefix } = await keyWithCalls(proxy, "restart@example.com", 5);
    await storeDown(proxy);
    for (let i = 0; i < 10; i++) expect(await proxy.call(key)).toBe(200);
    await postgres.start();
    await eventually(async () => (await proxy.dependencyUp("account_store")) === 1, 10_000, "store up");
    await eventually(
      async () => (await unitsOf(prefix).catch(() => 0)) >= 15 * UNITS_PER_CALL,
      10_000,
      "the outage's calls flushed",
    );
    // one more call after it, so that any write sent twice has landed by the time it is in
    expect(await proxy.call(key)).toBe(200);
    await eventually(async () => (await unitsOf(prefix)) >= 16 * UNITS_PER_CALL, 10_000, "the last call");
    expect(await unitsOf(prefix)).toBe(16 * UNITS_PER_CALL);
    await stopFleetProxy(proxy);
  }, 90_000);

  it("keeps what it served during an outage through a graceful stop made in it, once the store is back", async () => {
    const proxy = await startFleetProxy(config);
    proxies.push(proxy);
    const { key, prefix } = await keyWithCalls(proxy, "rolling@example.com", 5);
    await storeDown(proxy);
    for (let i = 0; i < 10; i++) expect(await proxy.call(key)).toBe(200);

    // a rolling deploy stops the proxy while PostgreSQL restarts: the stop's flush finds no store
    const exited = new Promise<number | null>((resolve) => proxy.child.once("exit", resolve));
    let gone = false;
    void exited.then(() => {
      gone = true;
    });
    const seen = proxy.logs.length;
    proxy.child.kill("SIGTERM");
    // the stop has reached its flush: it failed (and the proxy says it will try again, or it is gone)
    await eventually(
      () => gone || proxy.logs.slice(seen).some((line) => line.includes("usage counts not flushed")),
      20_000,
      "the stop's flush",
    );
    await postgres.start();
    expect(await exited).toBe(0);
    expect(await unitsOf(prefix)).toBe(15 * UNITS_PER_CALL);
    const lost = proxy.logs.filter((line) => line.includes('"msg":"usage counts not flushed at stop"'));
    expect(lost).toEqual([]);
  }, 90_000);
});
