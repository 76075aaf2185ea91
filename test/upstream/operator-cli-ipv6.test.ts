import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { freePort } from "../../src/dev/free-port.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { adminHere } from "../support/admin-here.js";
import { eventually } from "../support/eventually.js";
import { type FaultyNode, startFaultyNode } from "../support/faulty-node.js";
import { DOMAIN, TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder } from "../support/loopback-node.js";

// docs/upstreams.md: "The operator CLI does the same against a running proxy (`--proxy`, or the config's
// `operator.listen`)", and docs/deployment.md puts each proxy's operator API on "the host's private
// address" (GATEWAY_OPERATOR_HOST), which may be an IPv6 one. The CLI wrote `http://::1:8082`, no URL, and
// answered OPERATOR_UNREACHABLE (ERR_INVALID_URL) for a proxy that was up.

describe("the operator CLI at a config's IPv6 operator address", () => {
  let node: FaultyNode;
  let proxy: RunningProxy;
  let dir: string;
  let port: number;

  beforeAll(async () => {
    node = await startFaultyNode(() => jsonRpcResponder({ eth_blockNumber: "0x10" }));
    port = await freePort();
    proxy = await runProxy(
      {
        ...DEFAULT_CONFIG,
        domain: DOMAIN,
        listen: { host: "127.0.0.1", port: 0 },
        operator: { listen: { host: "::1", port } },
        keys: TEST_KEYS,
        upstreams: { eth: [{ url: node.url, name: "a" }] },
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 100, probeTimeoutMs: 300 },
        log: { level: "silent", access: false },
      },
      createLogger("silent", () => {}),
    );
    await eventually(() => node.requests.length > 0, 3000, "the first probe");
    dir = mkdtempSync(join(tmpdir(), "operator-ipv6-"));
    writeFileSync(join(dir, "gateway.yaml"), `operator: { listen: { host: "::1", port: ${port} } }\n`);
  });
  afterAll(async () => {
    await proxy?.close();
    await node?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("lists, cordons and uncordons through it", async () => {
    const env = { GATEWAY_CONFIG: join(dir, "gateway.yaml") };
    const list = await adminHere(env, "upstreams", "list");
    expect(list.err).toBe("");
    expect(list).toMatchObject({ code: 0 });
    expect(list.out).toMatch(/eth {2}a {2}(checking|healthy)/);
    const cordon = await adminHere(env, "upstreams", "cordon", "--label", "eth", "--upstream", "a");
    expect(cordon).toMatchObject({ code: 0, out: "eth a: cordoned (1)\n" });
    const uncordon = await adminHere(env, "upstreams", "uncordon", "--label", "eth", "--upstream", "a");
    expect(uncordon).toMatchObject({ code: 0, out: "eth a: uncordoned (1)\n" });
  });
});
