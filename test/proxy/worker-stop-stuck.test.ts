import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/eventually.js";
import { type FleetProxy, startFleetProxy } from "../support/fleet.js";
import { TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

const DOMAIN = "gw.test";
const KEY = TEST_KEYS[0]?.key as string;
const DRAIN_MS = 1_000;
/** How long past the drain timeout a worker may take to exit before it is killed (docs/operations.md). */
const STOP_GRACE_MS = 15_000;

// A proxy of two workers, one of them stopped (SIGSTOP) or stuck, as docs/operations.md names them: a
// SIGTERM to the primary told every worker to drain and waited for each to exit, and the stuck one never
// did (nor took its SIGTERM, which node:cluster sends once the worker has let go of its channel): the
// primary never exited, its listener open, until something outside killed it. A worker that has not
// exited by the drain timeout and a grace after it is now killed, and named in the log.

describe("a SIGTERM to a proxy with a stuck worker", () => {
  let node: LoopbackNode;
  let proxy: FleetProxy;
  let dir: string;
  let stopped: number | undefined;

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    dir = mkdtempSync(join(tmpdir(), "gateway-stuck-stop-"));
    const file = join(dir, "deployment.yaml");
    writeFileSync(
      file,
      [
        `domain: ${DOMAIN}`,
        "listen: { host: 127.0.0.1, port: 0 }",
        "operator: { listen: { host: 127.0.0.1, port: 0 } }",
        "workers: 2",
        `upstreams: { eth: ["${node.url}"] }`,
        "health: { probeIntervalMs: 0 }",
        `limits: { shutdownDelayMs: 0, drainTimeoutMs: ${DRAIN_MS} }`,
        "log: { level: info, access: false }",
        `keys: [{ key: ${KEY}, networks: "*" }]`,
      ].join("\n"),
    );
    proxy = await startFleetProxy(file);
  }, 60_000);
  afterAll(async () => {
    if (stopped !== undefined) process.kill(stopped, "SIGCONT");
    if (proxy?.child.exitCode === null && proxy.child.signalCode === null) {
      const exited = new Promise((resolve) => proxy.child.once("exit", resolve));
      proxy.child.kill("SIGKILL");
      await exited;
    }
    await node?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("kills the stuck worker past the drain timeout and a grace, and exits 0", async () => {
    const r = await request(`http://127.0.0.1:${proxy.operatorPort}/upstreams`);
    const pids = ((await r.body.json()) as { processes: { pid: number }[] }).processes.map((p) => p.pid);
    expect(pids).toHaveLength(2);
    stopped = pids[0] as number;
    process.kill(stopped, "SIGSTOP");
    const exited = new Promise<number | null>((resolve) => proxy.child.once("exit", (code) => resolve(code)));
    const started = performance.now();
    proxy.child.kill("SIGTERM");
    const outcome = await Promise.race([
      exited,
      new Promise<string>((resolve) =>
        setTimeout(() => resolve("still running"), DRAIN_MS + STOP_GRACE_MS + 5_000),
      ),
    ]);
    expect(outcome).toBe(0);
    expect(performance.now() - started).toBeGreaterThanOrEqual(DRAIN_MS + STOP_GRACE_MS - 100);
    const line = proxy.logs.find((l) => l.includes('"msg":"worker did not stop: killed"'));
    expect(JSON.parse(line ?? "{}")).toMatchObject({ level: "error", pid: stopped });
    // and the stuck worker is gone with it
    await eventually(
      () => {
        try {
          process.kill(stopped as number, 0);
          return false;
        } catch {
          return true;
        }
      },
      5_000,
      "the stuck worker ended",
    );
    stopped = undefined;
  }, 40_000);
});
