import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_CONFIG, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, startGateway, TEST_KEYS } from "../support/gateway.js";
import { parseExposition } from "../support/prometheus-text.js";

// An operator points `eth` (registry chainId 1) at two real anvil nodes, one of them started as BNB Smart
// Chain (chain id 56). The prober asks each which chain it is on before its first call: the BSC node is
// wrong-chain in GET /upstreams and in the metrics, the log says what it answered, and no call reaches it.

describe("a node on another chain than its label's", () => {
  let ethNode: Anvil;
  let bscNode: Anvil;
  let proxy: RunningProxy;
  const logs: string[] = [];

  const operator = async (path: string) => {
    const r = await request(`http://127.0.0.1:${proxy.operatorPort}${path}`);
    return r.body.text();
  };

  beforeAll(async () => {
    [ethNode, bscNode] = await Promise.all([startAnvil({ chainId: 1 }), startAnvil({ chainId: 56 })]);
    proxy = await runProxy(
      {
        ...DEFAULT_CONFIG,
        // what reaches the nodes is what this counts: no answer cache in between
        cache: { ...DEFAULT_CACHE, enabled: false },
        domain: DOMAIN,
        listen: { host: "127.0.0.1", port: 0 },
        operator: { listen: { host: "127.0.0.1", port: 0 } },
        keys: TEST_KEYS,
        upstreams: {
          eth: [
            { url: ethNode.url, name: "eth-node" },
            { url: bscNode.url, name: "bsc-node" },
          ],
        },
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 100, probeTimeoutMs: 1000 },
        log: { level: "info", access: true },
      },
      createLogger("info", (line) => logs.push(line)),
    );
  });
  afterAll(async () => {
    await proxy?.close();
    await Promise.all([ethNode?.stop(), bscNode?.stop()]);
  });

  it("gets no call, and shows as wrong-chain in GET /upstreams, the metrics and the log", async () => {
    // Calls sent at once: the first ones wait for the prober's first verdicts, and none goes to the BSC node.
    const calls = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const r = await request(`http://127.0.0.1:${proxy.port}/${KEYS.all}/`, {
          method: "POST",
          headers: { host: `eth.${DOMAIN}`, "content-type": "application/json" },
          body: `{"jsonrpc":"2.0","id":${i},"method":"eth_chainId","params":[]}`,
        });
        return { status: r.statusCode, body: (await r.body.json()) as { result?: string } };
      }),
    );
    for (const call of calls) expect(call).toMatchObject({ status: 200, body: { result: "0x1" } });
    const served = logs
      .filter((line) => line.includes('"msg":"request"'))
      .map((line) => (JSON.parse(line) as { upstream?: string }).upstream);
    expect(served).toHaveLength(40);
    expect(new Set(served)).toEqual(new Set(["eth-node"]));

    // the calls waited only for a node's verdict: the other's, on a loaded machine, may come a probe later
    const states = async () => {
      const upstreams = JSON.parse(await operator("/upstreams")) as {
        processes: { labels: { upstreams: { name: string; state: string; head: number | null }[] }[] }[];
      };
      return upstreams.processes[0]?.labels[0]?.upstreams.map((u) => [u.name, u.state]);
    };
    await expect.poll(states).toEqual([
      ["eth-node", "healthy"],
      ["bsc-node", "wrong-chain"],
    ]);

    const metrics = parseExposition(await operator("/metrics"));
    const state = (upstream: string, wanted: string) =>
      metrics.samples.find(
        (s) =>
          s.name === "gateway_upstream_state" && s.labels.upstream === upstream && s.labels.state === wanted,
      )?.value;
    expect(state("bsc-node", "wrong-chain")).toBe(1);
    expect(state("eth-node", "wrong-chain")).toBe(0);

    const said = logs.find((line) => line.includes('"to":"wrong-chain"'));
    expect(said).toContain('"upstream":"bsc-node"');
    expect(said).toContain('eth_chainId answered chain \\"56\\", but eth is chain \\"1\\"');
  });

  it("keeps it out while it stays there: its head counts for nothing, however high", async () => {
    type Report = { name: string; state: string; lagBlocks: number; lastErrorAt: string | null };
    const report = async (): Promise<Report[]> => {
      const body = JSON.parse(await operator("/upstreams")) as {
        processes: { labels: { upstreams: Report[] }[] }[];
      };
      return body.processes[0]?.labels[0]?.upstreams ?? [];
    };
    await bscNode.rpc("anvil_mine", ["0x3e8"]); // a thousand blocks ahead of the eth node
    // Probed again twice since (each probe of a node on another chain asks its chain, and notes it).
    const asked = async () => (await report()).find((u) => u.name === "bsc-node")?.lastErrorAt ?? "";
    const first = await asked();
    await eventually(async () => (await asked()) > first, 2000, "another probe of the BSC node");
    const second = await asked();
    await eventually(async () => (await asked()) > second, 2000, "one more");
    expect(await report()).toMatchObject([
      { name: "eth-node", state: "healthy", lagBlocks: 0 },
      { name: "bsc-node", state: "wrong-chain" },
    ]);
  });
});

describe("a label whose every node is on another chain", () => {
  it("answers NO_UPSTREAM saying so, for the caller and the operator", async () => {
    const bsc = await startAnvil({ chainId: 56 });
    const gw = await startGateway({
      upstreams: { eth: [{ url: bsc.url, name: "bsc-node" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    try {
      const member = () => gw.gateway.upstreams.group("eth", "/")?.members[0];
      await eventually(() => member()?.health.state === "wrong-chain", 5_000, "the node seen on chain 56");
      const answer = await gw.call("eth", `/${KEYS.all}`, {
        body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
      });
      expect(answer.status).toBe(503);
      expect(answer.text).toContain("NO_UPSTREAM");
      expect(answer.text).toContain("on another chain");
    } finally {
      await gw.close();
      await bsc.stop();
    }
  });
});

// A node found on another chain that then stops answering for a while goes `failing`; when it answers
// again, its first good probes must ask its chain again. The verdict was forgotten with the state: it came
// back healthy after two head probes and served another chain's blocks until the next chain check, a minute
// later (found by an operator's check with a paused anvil).
describe("a node on another chain that stops answering for a while", () => {
  it("comes back as wrong-chain, never into rotation", async () => {
    const [eth, bsc] = await Promise.all([startAnvil({ chainId: 1 }), startAnvil({ chainId: 56 })]);
    const gw = await startGateway({
      upstreams: {
        eth: [
          { url: eth.url, name: "eth-node" },
          { url: bsc.url, name: "bsc-node" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100, probeTimeoutMs: 300 },
    });
    const seen = new Set<string>();
    const state = () => gw.gateway.upstreams.group("eth", "/")?.members[1]?.health.state ?? "none";
    const watch = setInterval(() => seen.add(state()), 5);
    try {
      await eventually(() => state() === "wrong-chain", 5_000, "the node seen on chain 56");
      process.kill(bsc.pid, "SIGSTOP");
      try {
        await eventually(() => state() === "failing", 5_000, "the paused node failing");
      } finally {
        process.kill(bsc.pid, "SIGCONT");
      }
      // back on chain 56, and kept there for ten probe intervals since
      let since = 0;
      await eventually(
        () => {
          if (state() !== "wrong-chain") since = 0;
          else since ||= Date.now();
          return since > 0 && Date.now() - since >= 1_000;
        },
        10_000,
        "the node back as wrong-chain for a second",
      );
      expect([...seen].filter((s) => s !== "checking")).toEqual(["wrong-chain", "failing"]);
    } finally {
      clearInterval(watch);
      await gw.close();
      await Promise.all([eth.stop(), bsc.stop()]);
    }
  });
});
