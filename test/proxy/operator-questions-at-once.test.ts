import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/eventually.js";
import { type FleetProxy, startFleetProxy, stopFleetProxy } from "../support/fleet.js";
import { TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// A proxy with workers answers the operator API by asking each worker (src/proxy/worker-link.ts `ask`).
// Each question added a listener to the worker's channel until its answer came (up to 1 s for a silent
// worker), so a dozen questions at once (a scrape, a few balancers' readiness checks) passed Node's limit
// of 10, and Node wrote "MaxListenersExceededWarning: Possible EventEmitter memory leak detected" to stderr:
// a line that is not JSON among the proxy's JSON lines (docs/configuration.md `log`), and a leak that is
// not one. One listener per worker now reads every answer.

const DOMAIN = "gw.test";
const KEY = TEST_KEYS[0]?.key as string;

describe("the operator API asked many questions at once, with workers", () => {
  let node: LoopbackNode;
  let proxy: FleetProxy;
  let dir: string;

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    dir = mkdtempSync(join(tmpdir(), "gateway-operator-at-once-"));
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
        "log: { level: info, access: false }",
        `keys: [{ key: ${KEY}, networks: "*" }]`,
      ].join("\n"),
    );
    proxy = await startFleetProxy(file);
  }, 60_000);
  afterAll(async () => {
    if (proxy !== undefined) await stopFleetProxy(proxy);
    await node?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("answers 30 at once, and its stderr holds JSON lines only", async () => {
    const paths = ["/readyz", "/metrics", "/upstreams"];
    const statuses = await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const answer = await request(`http://127.0.0.1:${proxy.operatorPort}${paths[i % paths.length]}`);
        await answer.body.dump();
        return answer.statusCode;
      }),
    );
    expect(statuses.every((status) => status === 200)).toBe(true);
    // a line the primary writes after them: whatever they made it write is in the log before it
    proxy.child.kill("SIGHUP");
    await eventually(() => proxy.logs.some((l) => l.includes('"msg":"config reloaded"')), 10_000, "reloaded");
    expect(proxy.logs.filter((line) => !line.startsWith("{"))).toEqual([]);
  }, 30_000);
});
