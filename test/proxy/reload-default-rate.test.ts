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

// An operator lowers `defaultRate` (a key's call rate unless its account sets another) in the deployment
// config and sends the proxy SIGHUP. It is no setting that takes a restart (README, "Signals"), and the
// proxy logs "config reloaded" with no warning: the account store's keys without a rate of their own, every
// ordered key, must be held to the new rate from the next call, as a static key is.

describe("a reload that changes defaultRate", () => {
  let dir = "";
  let node: LoopbackNode;
  let control: ControlPlane;
  let proxy: FleetProxy;
  let accountKey = "";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "reload-default-rate-"));
    const database = join(dir, "accounts.sqlite");
    node = await startLoopbackNode(jsonRpcResponder({ eth_chainId: "0x1", eth_blockNumber: "0x2a" }));
    control = await startFleetControlPlane(database, dir);
    const account = await control.store.createAccount("rate@example.com", "active", Date.now());
    ({ key: accountKey } = await control.service.keys.issue(account.id, { networks: "*", plan: "shared" }));
    const config = writeFleetConfig(dir, {
      database,
      upstream: node.url,
      extra: ["defaultRate: { perSecond: 1000, burst: 1000 }"],
    });
    proxy = await startFleetProxy(config);
    await eventually(() => proxy.knows(accountKey), 10_000, "the proxy holding the issued key");
  }, 60_000);
  afterAll(async () => {
    if (proxy !== undefined) await stopFleetProxy(proxy);
    await Promise.all([control?.close(), node?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("holds the account store's keys to the reloaded rate", async () => {
    expect(await proxy.call(accountKey)).toBe(200);
    writeFleetConfig(dir, {
      database: join(dir, "accounts.sqlite"),
      upstream: node.url,
      extra: ["defaultRate: { perSecond: 0.01, burst: 1 }"],
    });
    proxy.child.kill("SIGHUP");
    await eventually(
      () => proxy.logs.some((l) => l.includes('"msg":"config reloaded"')),
      10_000,
      "the reload logged",
    );
    expect(proxy.logs.filter((l) => l.includes("take a restart"))).toEqual([]);
    // a burst of one: the first call after the reload is served, the second refused
    const statuses = [
      await proxy.call(accountKey),
      await proxy.call(accountKey),
      await proxy.call(accountKey),
    ];
    expect(statuses).toEqual([200, 429, 429]);
  }, 30_000);
});
