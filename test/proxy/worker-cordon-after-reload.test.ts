import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/eventually.js";
import { type FleetProxy, startFleetProxy, stopFleetProxy } from "../support/fleet.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// An operator with two workers cordons node-b for maintenance, takes it out of the deployment config and
// reloads, then puts it back and reloads: every worker serves node-b again (a reload that names it again
// brings it back, docs/upstreams.md). A worker that exits later is started again and "takes the cordons
// its peers hold" (same page): its peers hold none, so it must not cordon node-b alone.

const KEY = "FNwcordon000000000000000000000001";

interface Upstreams {
  processes: { pid: number; labels: { label: string; upstreams: { name: string; state: string }[] }[] }[];
}

describe("a cordon of a node a reload removed, with workers", () => {
  let a: LoopbackNode;
  let b: LoopbackNode;
  let proxy: FleetProxy;
  let dir = "";
  let config = "";

  const write = (upstreams: string) =>
    writeFileSync(
      config,
      [
        "domain: gw.test",
        "listen: { host: 127.0.0.1, port: 0 }",
        "operator: { listen: { host: 127.0.0.1, port: 0 } }",
        "workers: 2",
        `upstreams: { eth: [${upstreams}] }`,
        "health: { probeIntervalMs: 0 }",
        "log: { level: info, access: false }",
        `keys: [{ key: ${KEY}, networks: "*" }]`,
      ].join("\n"),
    );
  const nodeA = () => `{ url: "${a.url}", name: node-a }`;
  const nodeB = () => `{ url: "${b.url}", name: node-b }`;
  const report = async () => {
    const r = await request(`http://127.0.0.1:${proxy.operatorPort}/upstreams`, { headersTimeout: 10_000 });
    return JSON.parse(await r.body.text()) as Upstreams;
  };
  /** node-b's state in each worker, or "absent". */
  const statesOfB = async () =>
    (await report()).processes.map(
      (p) =>
        p.labels.find((l) => l.label === "eth")?.upstreams.find((u) => u.name === "node-b")?.state ??
        "absent",
    );
  const reload = async (upstreams: string) => {
    const reloaded = () => proxy.logs.filter((l) => l.includes('"msg":"config reloaded"')).length;
    const before = reloaded();
    write(upstreams);
    proxy.child.kill("SIGHUP");
    await eventually(() => reloaded() > before, 10_000, "the reload");
  };

  beforeAll(async () => {
    a = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1" }));
    b = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1" }));
    dir = mkdtempSync(join(tmpdir(), "worker-cordon-"));
    config = join(dir, "deployment.yaml");
    write(`${nodeA()}, ${nodeB()}`);
    proxy = await startFleetProxy(config);
  }, 60_000);
  afterAll(async () => {
    if (proxy !== undefined) await stopFleetProxy(proxy);
    await Promise.all([a?.close(), b?.close()]);
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  it("a worker started again after the node came back serves it, as its peer does", async () => {
    const cordoned = await request(`http://127.0.0.1:${proxy.operatorPort}/upstreams/cordon`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ label: "eth", upstream: "node-b" }),
    });
    await cordoned.body.text();
    expect(cordoned.statusCode).toBe(200);
    expect(await statesOfB()).toEqual(["cordoned", "cordoned"]);
    await reload(nodeA());
    await eventually(async () => (await statesOfB()).every((s) => s === "absent"), 10_000, "node-b gone");
    await reload(`${nodeA()}, ${nodeB()}`);
    await eventually(async () => (await statesOfB()).every((s) => s === "healthy"), 10_000, "node-b back");
    // one worker exits and is started again
    const [first] = (await report()).processes;
    process.kill(first?.pid as number, "SIGKILL");
    await eventually(
      async () => {
        const { processes } = await report();
        return processes.length === 2 && !processes.some((p) => p.pid === first?.pid);
      },
      20_000,
      "the worker started again",
    );
    // ready once the new worker listens: its "listening" reached the primary, which then sent it the
    // cordons to take, before the ready answer that follows on the same channel; questions after it are
    // answered with those cordons applied
    await eventually(
      async () => {
        const r = await request(`http://127.0.0.1:${proxy.operatorPort}/readyz`, { headersTimeout: 10_000 });
        await r.body.text();
        return r.statusCode === 200;
      },
      20_000,
      "both workers ready",
    );
    expect(await statesOfB()).toEqual(["healthy", "healthy"]);
  }, 60_000);
});
