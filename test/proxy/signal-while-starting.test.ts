import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleOf } from "../support/bundles.js";
import { eventually } from "../support/eventually.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { startTcpForwarder, type TcpForwarder } from "../support/tcp-forwarder.js";

// An operator's SIGHUP (config management that reloads after each edit) or SIGTERM that reaches the proxy
// while it starts: here, while its start waits for a Redis that does not answer (up to 2 s,
// docs/deployment.md). The README: SIGHUP re-reads the config; SIGTERM drains and exits 0. Neither may
// end the process by the signal's default action, with no line logged.

const KEY = "FNsigstart000000000000000000000001";

interface Started {
  readonly child: ChildProcess;
  readonly logs: string[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

describe("a signal that reaches the proxy while it starts", () => {
  let dir: string;
  let node: LoopbackNode;
  let redis: TcpForwarder;
  let config: string;
  const started: Started[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "signal-while-starting-"));
    node = await startLoopbackNode(jsonRpcResponder({ eth_chainId: "0x1", eth_blockNumber: "0xa" }));
    // a Redis that takes the connection and then answers nothing: the start waits for it
    redis = await startTcpForwarder(6379);
    redis.blackHole();
    config = join(dir, "deployment.yaml");
    writeFileSync(
      config,
      [
        "domain: gw.test",
        "listen: { host: 127.0.0.1, port: 0 }",
        "operator: { listen: { host: 127.0.0.1, port: 0 } }",
        `upstreams: { eth: ["${node.url}"] }`,
        "health: { probeIntervalMs: 0 }",
        `keys: [{ key: ${KEY}, networks: "*" }]`,
        `sharedLimits: { redis: "redis://127.0.0.1:${redis.port}/12" }`,
        "log: { level: info, access: false }",
      ].join("\n"),
    );
  }, 60_000);
  afterAll(async () => {
    for (const { child } of started)
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await Promise.all([node?.close(), redis?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  /** Starts the proxy and resolves once it is in its start, talking to the silent Redis. */
  const startProxy = async (): Promise<Started> => {
    const accepted = redis.accepted;
    const child = spawn(process.execPath, [await bundleOf("src/proxy/main.ts")], {
      env: { ...process.env, GATEWAY_CONFIG: config },
      stdio: ["ignore", "ignore", "pipe"],
    });
    const logs: string[] = [];
    child.stderr?.on("data", (chunk: Buffer) => logs.push(...chunk.toString().split("\n").filter(Boolean)));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once("exit", (code, signal) => resolve({ code, signal })),
    );
    const one = { child, logs, exited };
    started.push(one);
    await eventually(() => redis.accepted > accepted, 20_000, "the proxy connecting to Redis as it starts");
    expect(logs.some((l) => l.includes('"msg":"gateway listening"'))).toBe(false);
    return one;
  };

  it("SIGHUP: the proxy goes on starting, listens, and has read the config again", async () => {
    const proxy = await startProxy();
    proxy.child.kill("SIGHUP");
    await eventually(
      () =>
        proxy.child.exitCode !== null ||
        proxy.child.signalCode !== null ||
        proxy.logs.some((l) => l.includes('"msg":"gateway listening"')),
      20_000,
      "the proxy listening or gone",
    );
    expect({ code: proxy.child.exitCode, signal: proxy.child.signalCode }).toEqual({
      code: null,
      signal: null,
    });
    await eventually(
      () => proxy.logs.some((l) => l.includes('"msg":"config reloaded"')),
      10_000,
      "the signal's reload",
    );
    proxy.child.kill("SIGTERM");
    expect(await proxy.exited).toEqual({ code: 0, signal: null });
  }, 60_000);

  it("SIGTERM: the proxy stops as a stop does, exit 0", async () => {
    const proxy = await startProxy();
    proxy.child.kill("SIGTERM");
    expect(await proxy.exited).toEqual({ code: 0, signal: null });
    expect(proxy.logs.some((l) => l.includes('"msg":"shutting down"'))).toBe(true);
  }, 60_000);
});
