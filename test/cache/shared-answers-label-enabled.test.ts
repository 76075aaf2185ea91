import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { type FleetProxy, startFleetProxy, stopFleetProxy } from "../support/fleet.js";
import { type RecordingNode, startRecordingNode } from "../support/recording-node.js";

// An operator turns the answer cache on for one label only (docs/configuration.md: `cache.enabled`, "and
// any of them per label under labels"), on proxies that share a Redis (`sharedLimits`). docs/cache.md,
// "Many instances": with sharedLimits, final answers are shared by every instance. The label's final
// answers must be shared, as they are when the cache is on for every label.

const REDIS = "redis://127.0.0.1:6379/12";
const KEY = "FNlabelcache0000000000000000000001";

describe("a cache turned on for one label, on two proxies sharing Redis", () => {
  let dir = "";
  let anvil: Anvil;
  let node: RecordingNode;
  const proxies: FleetProxy[] = [];

  const block = async (proxy: FleetProxy, number: string) => {
    const answer = await request(`http://127.0.0.1:${proxy.port}/${KEY}/`, {
      method: "POST",
      headers: { host: "eth.gw.test", "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getBlockByNumber",
        params: [number, false],
      }),
    });
    const body = (await answer.body.json()) as { result?: { number: string } };
    return { status: answer.statusCode, cache: answer.headers["x-cache"], number: body.result?.number };
  };
  const stored = async (proxy: FleetProxy) => {
    const text = await (await request(`http://127.0.0.1:${proxy.operatorPort}/metrics`)).body.text();
    const line = text
      .split("\n")
      .find((l) => l.startsWith("gateway_cache_shared_total{") && l.includes('outcome="stored"'));
    return Number(line?.split(" ").pop() ?? 0);
  };
  const flush = async () => {
    const redis = new Redis(REDIS);
    await redis.flushdb();
    redis.disconnect();
  };

  beforeAll(async () => {
    await flush();
    dir = mkdtempSync(join(tmpdir(), "label-cache-"));
    anvil = await startAnvil({ chainId: 1 });
    await anvil.rpc("anvil_mine", ["0x200"]);
    node = await startRecordingNode(anvil.url);
    const config = join(dir, "deployment.yaml");
    writeFileSync(
      config,
      [
        "domain: gw.test",
        "listen: { host: 127.0.0.1, port: 0 }",
        "operator: { listen: { host: 127.0.0.1, port: 0 } }",
        `upstreams: { eth: ["${node.url}"] }`,
        "health: { probeIntervalMs: 100 }",
        "cache: { enabled: false, labels: { eth: { enabled: true } } }",
        `keys: [{ key: ${KEY}, networks: "*" }]`,
        `sharedLimits: { redis: "${REDIS}" }`,
        "log: { level: info, access: false }",
      ].join("\n"),
    );
    proxies.push(...(await Promise.all([0, 1].map(() => startFleetProxy(config)))));
    // both probers have read the finalized height (block 448 of 512): the node sees a probe's call before
    // its proxy has the answer, so not two calls (under load, the first block asked was not final yet, and
    // was kept by the proxy alone) but rounds of both, each probing every 100 ms
    await eventually(
      () => node.calls.filter((c) => JSON.stringify(c.params) === '["finalized",false]').length >= 8,
      10_000,
      "finality probes",
    );
  }, 60_000);
  afterAll(async () => {
    await Promise.all(proxies.map(stopFleetProxy));
    await node?.close();
    await anvil?.stop();
    await flush();
    rmSync(dir, { recursive: true, force: true });
  });

  it("shares the label's final answers: one proxy's answer is the other's hit, the node asked once", async () => {
    const [a, b] = proxies as [FleetProxy, FleetProxy];
    const asked = (number: string) =>
      node.calls.filter(
        (c) => c.method === "eth_getBlockByNumber" && JSON.stringify(c.params) === `["${number}",false]`,
      ).length;
    const first = await block(a, "0x3");
    expect(first).toMatchObject({ status: 200, cache: "miss", number: "0x3" });
    // a proxy shares no answer before Redis has said how much memory it has (its first answer asks), nor
    // one of a block asked before its prober had the finalized height; each block asked again is its own
    // cache's: the first proxy asks final blocks one after another until it has shared one
    let number = 3;
    await eventually(
      async () => {
        number += 1;
        return (await block(a, `0x${number.toString(16)}`)).status === 200 && (await stored(a)) >= 1;
      },
      10_000,
      "the first proxy's answer stored in Redis",
    );
    // the one shared may be an earlier one whose write landed as the next was asked: the second proxy
    // asks the newest first, and one of them is its hit
    let hit: Awaited<ReturnType<typeof block>> | undefined;
    for (let n = number; n > 3 && hit?.cache !== "hit"; n--) hit = await block(b, `0x${n.toString(16)}`);
    expect(hit).toMatchObject({ cache: "hit" });
    expect(asked(hit?.number as string)).toBe(1);
  }, 30_000);
});
