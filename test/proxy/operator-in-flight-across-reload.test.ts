import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/eventually.js";
import { type FleetProxy, startFleetProxy, stopFleetProxy } from "../support/fleet.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { parseExposition } from "../support/prometheus-text.js";

// An operator reloads (SIGHUP) while a call is out at a node, and reads the node's calls in flight in the
// two places docs/upstreams.md and docs/operations.md give: GET /upstreams (`inFlight`) and
// gateway_upstream_in_flight. The metric counts the call the retired config still has out on the node
// (docs/operations.md); /upstreams must say the same of the same node, not that it is idle.

const KEY = "FNopinflight00000000000000000001";

interface Upstreams {
  processes: { labels: { label: string; upstreams: { name: string; inFlight: number }[] }[] }[];
}

describe("a node's calls in flight across a reload, in /upstreams and /metrics", () => {
  let dir = "";
  let config = "";
  let node: LoopbackNode;
  let proxy: FleetProxy;
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const answer = jsonRpcResponder({ eth_chainId: "0x1", eth_blockNumber: "0x10", eth_gasPrice: "0x1" });
  let gasPrices = 0;

  const write = (maxBatch: number) =>
    writeFileSync(
      config,
      [
        "domain: gw.test",
        "listen: { host: 127.0.0.1, port: 0 }",
        "operator: { listen: { host: 127.0.0.1, port: 0 } }",
        `upstreams: { eth: [{ url: "${node.url}", name: n1 }] }`,
        "health: { probeIntervalMs: 0 }",
        `limits: { maxBatch: ${maxBatch} }`,
        `keys: [{ key: ${KEY}, networks: "*" }]`,
        "log: { level: info, access: false }",
      ].join("\n"),
    );
  const fromUpstreams = async () => {
    const r = await request(`http://127.0.0.1:${proxy.operatorPort}/upstreams`);
    const report = JSON.parse(await r.body.text()) as Upstreams;
    return report.processes[0]?.labels.find((l) => l.label === "eth")?.upstreams.find((u) => u.name === "n1")
      ?.inFlight;
  };
  const fromMetrics = async () => {
    const r = await request(`http://127.0.0.1:${proxy.operatorPort}/metrics`);
    return parseExposition(await r.body.text()).samples.find(
      (s) => s.name === "gateway_upstream_in_flight" && s.labels.upstream === "n1",
    )?.value;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "operator-in-flight-"));
    config = join(dir, "deployment.yaml");
    node = await startLoopbackNode(async (seen) => {
      if (seen.body.includes("eth_gasPrice")) {
        gasPrices += 1;
        await released;
      }
      return answer(seen);
    });
    write(100);
    proxy = await startFleetProxy(config);
  }, 60_000);
  afterAll(async () => {
    release();
    if (proxy !== undefined) await stopFleetProxy(proxy);
    await node?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("both say the call is out until it is answered", async () => {
    const call = request(`http://127.0.0.1:${proxy.port}/${KEY}/`, {
      method: "POST",
      headers: { host: "eth.gw.test", "content-type": "application/json" },
      body: '{"jsonrpc":"2.0","id":1,"method":"eth_gasPrice","params":[]}',
    });
    await eventually(() => gasPrices === 1, 10_000, "the call at the node");
    expect([await fromUpstreams(), await fromMetrics()]).toEqual([1, 1]);
    write(99);
    proxy.child.kill("SIGHUP");
    await eventually(
      () => proxy.logs.some((l) => l.includes('"msg":"config reloaded"')),
      10_000,
      "the reload",
    );
    expect({ upstreams: await fromUpstreams(), metrics: await fromMetrics() }).toEqual({
      upstreams: 1,
      metrics: 1,
    });
    release();
    const answered = await call;
    await answered.body.text();
    expect(answered.statusCode).toBe(200);
    await eventually(async () => (await fromMetrics()) === 0, 5_000, "the call no longer out");
    expect(await fromUpstreams()).toBe(0);
  }, 30_000);
});
