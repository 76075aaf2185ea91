import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { GatewayConfig, StaticKey } from "../../src/config/types.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { DOMAIN } from "../support/gateway.js";

// A key withdrawn while it holds a stream (Octez's /monitor/heads: a chunked answer the node keeps open,
// pushing each head) or a long poll: its WebSocket connections were closed with 1008, but the stream went
// on pushing the chain's heads to a revoked key for as long as it listened. Its connection is now cut too,
// and logged KEY_WITHDRAWN; a key the change leaves as it was keeps its stream.
const RATE = { perSecond: 1_000, burst: 1_000 };
const REMOVED: StaticKey = { key: "FNgoneStream000000000000000000", networks: "*", rate: RATE };
const KEPT: StaticKey = { key: "FNkeptStream000000000000000000", networks: "*", rate: RATE };

/** One head as Octez's /monitor/heads/<chain> pushes it: a block header, one JSON object per chunk. */
function head(level: number): string {
  return `${JSON.stringify({
    hash: `BL${String(level).padStart(49, "a")}`,
    level,
    proto: 19,
    predecessor: `BL${String(level - 1).padStart(49, "a")}`,
    timestamp: new Date(1_700_000_000_000 + level * 8_000).toISOString().replace(".000", ""),
    validation_pass: 4,
    operations_hash: "LLoZvtaRcbpUgE2Cu3zzXjeGbJ7Bpbb2UbJB2Q3BrtHV3N5kEjvDd",
    fitness: ["02", "00000000", "", "ffffffff", "00000000"],
    context: "CoVZiJQZGLxsDPxXUfM3NERRxCB3h5HQWFJ2qfavGADBCNiBvbvn",
  })}\n`;
}

describe("a key withdrawn while it holds a stream", () => {
  let node: Server;
  let proxy: RunningProxy;
  let config: GatewayConfig;
  const streams = new Set<ServerResponse>();
  const lines: string[] = [];

  beforeAll(async () => {
    node = createServer((req, res) => {
      if (req.url !== "/monitor/heads/main") return res.writeHead(404).end();
      res.writeHead(200, { "content-type": "application/json" });
      res.flushHeaders();
      streams.add(res);
      res.on("close", () => streams.delete(res));
    });
    await new Promise<void>((resolve) => node.listen(0, "127.0.0.1", resolve));
    config = {
      ...DEFAULT_CONFIG,
      domain: DOMAIN,
      listen: { host: "127.0.0.1", port: 0 },
      operator: undefined,
      keys: [REMOVED, KEPT],
      upstreams: { xtz: [`http://127.0.0.1:${(node.address() as AddressInfo).port}`] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 0 },
      limits: { ...DEFAULT_LIMITS, drainTimeoutMs: 0 },
      log: { level: "info", access: true },
    };
    proxy = await runProxy(
      config,
      createLogger("info", (line) => lines.push(line)),
    );
  });
  afterAll(async () => {
    await proxy?.close();
    node?.closeAllConnections();
    node?.close();
  });

  it("ends it, and logs it KEY_WITHDRAWN; a key left as it was keeps its own", async () => {
    const open = async (key: StaticKey) => {
      const answer = await request(`http://127.0.0.1:${proxy.port}/${key.key}/monitor/heads/main`, {
        headers: { host: `xtz.${DOMAIN}` },
      });
      expect(answer.statusCode).toBe(200);
      const received: string[] = [];
      answer.body.on("data", (chunk: Buffer) => received.push(chunk.toString()));
      // a cut answer's body ends with undici's error: the stream is over either way
      const ended = new Promise<string>((resolve) => {
        answer.body.on("error", () => resolve("cut"));
        answer.body.on("end", () => resolve("ended"));
      });
      return { received, ended, close: () => answer.body.destroy() };
    };
    const removed = await open(REMOVED);
    const kept = await open(KEPT);
    const push = (level: number) => {
      for (const res of streams) res.write(head(level));
    };
    await expect.poll(() => streams.size).toBe(2);
    push(1);
    for (const stream of [removed, kept])
      await expect.poll(() => stream.received.join("")).toContain('"level":1');
    proxy.reload({ ...config, keys: [KEPT] });
    expect(await removed.ended).toBe("cut");
    // the node's request ends with it
    await expect.poll(() => streams.size).toBe(1);
    push(2);
    await expect.poll(() => kept.received.join("")).toContain('"level":2');
    expect(removed.received.join("")).not.toContain('"level":2');
    kept.close();
    await expect
      .poll(() => lines.find((line) => line.includes('"error":"KEY_WITHDRAWN"')))
      .toContain('"status":200');
  });
});
