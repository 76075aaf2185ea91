import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/eventually.js";
import { type FleetProxy, startFleetProxy, stopFleetProxy } from "../support/fleet.js";
import { KEYS, TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// A user saw a proxy with workers run one worker short for good, /readyz 503, after a reload that it refused
// (the edited file had a mistake; the old config kept serving): a worker that died was started again, read
// the config file itself, met the mistake and exited 2, again and again. A worker is now handed the config
// its primary serves (worker-link.ts configFromPrimary) and never reads the file.

const DOMAIN = "gw.test";

describe("a worker started again after a refused reload", () => {
  let node: LoopbackNode;
  let proxy: FleetProxy;
  let dir: string;
  let file: string;
  let port = 0;
  let operatorPort = 0;
  let logs: string[] = [];

  const operator = async (path: string) => {
    const r = await request(`http://127.0.0.1:${operatorPort}${path}`, { headersTimeout: 10_000 });
    return { status: r.statusCode, text: await r.body.text() };
  };
  const pids = async () =>
    (JSON.parse((await operator("/upstreams")).text) as { processes: { pid: number }[] }).processes.map(
      (p) => p.pid,
    );

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1" }));
    dir = mkdtempSync(join(tmpdir(), "worker-config-"));
    file = join(dir, "deployment.yaml");
    writeFileSync(
      file,
      [
        `domain: ${DOMAIN}`,
        "listen: { host: 127.0.0.1, port: 0 }",
        "operator: { listen: { host: 127.0.0.1, port: 0 } }",
        "workers: 2",
        `upstreams: { eth: ["${node.url}"] }`,
        "health: { probeIntervalMs: 0 }",
        "log: { level: info, access: false }",
        `keys: [{ key: ${TEST_KEYS[0]?.key}, networks: "*" }]`,
      ].join("\n"),
    );
    proxy = await startFleetProxy(file);
    ({ port, operatorPort, logs } = proxy);
  }, 60_000);
  afterAll(async () => {
    if (proxy !== undefined) await stopFleetProxy(proxy);
    await node?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("comes back on the config that serves, not on the refused file", async () => {
    await eventually(async () => (await pids()).length === 2, 15_000, "two workers");
    // the operator's edit has a mistake; the reload is refused and the old config keeps serving
    writeFileSync(file, `domain: ${DOMAIN}\nlimits: { maxBatch: "many" }\n`);
    proxy.child.kill("SIGHUP");
    await eventually(() => logs.some((l) => l.includes("config reload refused")), 5_000, "reload refused");
    const r = await request(`http://127.0.0.1:${port}/${KEYS.all}/`, {
      method: "POST",
      headers: { host: `eth.${DOMAIN}`, "content-type": "application/json" },
      body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
    });
    expect(await r.body.json()).toMatchObject({ result: "0x10" });
    // a worker dies (OOM killer, a crash): it is started again
    const [victim] = await pids();
    process.kill(victim as number, "SIGKILL");
    await eventually(() => logs.some((l) => l.includes('"msg":"worker exited"')), 5_000, "the exit logged");
    await eventually(
      async () => {
        const now = await pids();
        return (
          now.length === 2 && !now.includes(victim as number) && (await operator("/readyz")).status === 200
        );
      },
      15_000,
      "the worker started again, and ready",
    );
    const invalidExits = logs.filter((l) => l.includes('"msg":"worker exited"') && l.includes('"code":2'));
    expect(invalidExits).toEqual([]);
    expect((await operator("/readyz")).status).toBe(200);
  }, 40_000);
});
