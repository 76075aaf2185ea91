import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { eventually } from "../support/eventually.js";
import { type FleetProxy, startFleetProxy, stopFleetProxy } from "../support/fleet.js";
import { TEST_KEYS } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";

// `ws.maxConnectionsPerKey` and `ws.maxConnectionsPerIp` hold for the instance, whatever its `workers`
// (docs/configuration.md): each worker counted its own, so `workers: 2` let a key open twice its cap. The
// primary now counts every worker's connections, frees a slot as its connection closes, and frees a dead
// worker's slots with it.

const DOMAIN = "gw.test";
const KEY = TEST_KEYS[0]?.key as string;
const CAP = 2;

describe("WebSocket connection caps with workers", () => {
  let node: LoopbackWsNode;
  let proxy: FleetProxy;
  let dir: string;
  let port = 0;
  let operatorPort = 0;
  const sockets: WebSocket[] = [];

  beforeAll(async () => {
    node = await startLoopbackWsNode(evmNode());
    dir = mkdtempSync(join(tmpdir(), "gateway-ws-caps-"));
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
        `limits: { shutdownDelayMs: 0, ws: { maxConnectionsPerKey: ${CAP}, maxConnectionsPerIp: ${CAP} } }`,
        "log: { level: info, access: false }",
        `keys: [{ key: ${KEY}, networks: "*" }]`,
      ].join("\n"),
    );
    // the primary's "gateway listening" line, once every worker listens
    proxy = await startFleetProxy(file);
    ({ port, operatorPort } = proxy);
  }, 60_000);
  afterAll(async () => {
    for (const s of sockets) s.terminate();
    if (proxy !== undefined) await stopFleetProxy(proxy);
    await node?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /** One upgrade of the key: its open socket, or the status that refused it. */
  const open = () =>
    new Promise<WebSocket | number>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/${KEY}`, { headers: { host: `eth.${DOMAIN}` } });
      ws.once("open", () => {
        sockets.push(ws);
        resolve(ws);
      });
      ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      ws.once("error", () => resolve(-1));
    });
  const opened = (results: (WebSocket | number)[]) =>
    results.filter((r): r is WebSocket => typeof r !== "number");
  const closed = (ws: WebSocket) => new Promise((resolve) => ws.once("close", resolve));
  /** The workers that answer the primary: those that have started. */
  const workerPids = async () => {
    const r = await request(`http://127.0.0.1:${operatorPort}/upstreams`);
    const { processes } = JSON.parse(await r.body.text()) as {
      processes: { pid: number; silent?: string }[];
    };
    return processes.filter((p) => p.silent === undefined).map((p) => p.pid);
  };

  it("counts every worker's connections: of 6 at once, 2 open; a close frees a slot, a dead worker its own", async () => {
    // at once, so that both workers ask together: the primary gives the last slot once
    const first = await Promise.all(Array.from({ length: 6 }, open));
    const held = opened(first);
    expect(held).toHaveLength(CAP);
    expect(first.filter((r) => r === 429)).toHaveLength(6 - CAP);

    const one = held[0] as WebSocket;
    const gone = closed(one);
    one.close();
    await gone;
    await eventually(async () => typeof (await open()) !== "number", 5_000, "a slot freed by a close");
    expect(await open()).toBe(429);

    // each worker killed in turn (both at once would close the shared listener, and port 0 would move):
    // its connections end with it, and so do its slots
    const endings = sockets.filter((ws) => ws.readyState === WebSocket.OPEN).map(closed);
    expect(endings).toHaveLength(CAP);
    for (const pid of await workerPids()) {
      process.kill(pid, "SIGKILL");
      await eventually(
        async () => {
          const now = await workerPids();
          return now.length === 2 && !now.includes(pid);
        },
        10_000,
        "restarted",
      );
    }
    await Promise.all(endings);
    const after = await Promise.all(Array.from({ length: 4 }, open));
    expect(opened(after)).toHaveLength(CAP);
  }, 30_000);
});
