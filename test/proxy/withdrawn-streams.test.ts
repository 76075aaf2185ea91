import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { GatewayConfig, StaticKey } from "../../src/config/types.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { DOMAIN } from "../support/gateway.js";
import { type HeadsStreamNode, startHeadsStreamNode } from "../support/heads-stream-node.js";

// A key withdrawn while it holds a stream (Octez's /monitor/heads: a chunked answer the node keeps open,
// pushing each head) or a long poll: its WebSocket connections were closed with 1008, but the stream went
// on pushing the chain's heads to a revoked key for as long as it listened. Its connection is now cut too,
// and logged KEY_WITHDRAWN; a key the change leaves as it was keeps its stream.
const RATE = { perSecond: 1_000, burst: 1_000 };
const REMOVED: StaticKey = { key: "FNgoneStream000000000000000000", networks: "*", rate: RATE };
const KEPT: StaticKey = { key: "FNkeptStream000000000000000000", networks: "*", rate: RATE };

describe("a key withdrawn while it holds a stream", () => {
  let node: HeadsStreamNode;
  let proxy: RunningProxy;
  let config: GatewayConfig;
  const lines: string[] = [];

  beforeAll(async () => {
    node = await startHeadsStreamNode();
    config = {
      ...DEFAULT_CONFIG,
      domain: DOMAIN,
      listen: { host: "127.0.0.1", port: 0 },
      operator: undefined,
      keys: [REMOVED, KEPT],
      upstreams: { xtz: [node.url] },
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
    const push = (level: number) => node.push(level);
    await expect.poll(() => node.streams.size).toBe(2);
    push(1);
    for (const stream of [removed, kept])
      await expect.poll(() => stream.received.join("")).toContain('"level":1');
    proxy.reload({ ...config, keys: [KEPT] });
    expect(await removed.ended).toBe("cut");
    // the node's request ends with it
    await expect.poll(() => node.streams.size).toBe(1);
    push(2);
    await expect.poll(() => kept.received.join("")).toContain('"level":2');
    expect(removed.received.join("")).not.toContain('"level":2');
    kept.close();
    await expect
      .poll(() => lines.find((line) => line.includes('"error":"KEY_WITHDRAWN"')))
      .toContain('"status":200');
  });
});
