import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { GatewayConfig, StaticKey } from "../../src/config/types.js";
import { keyHash } from "../../src/keys/digest.js";
import { StaticKeyStore } from "../../src/keys/static-store.js";
import { TokenBuckets } from "../../src/limits/token-bucket.js";
import { createLogger } from "../../src/log.js";
import { createProxyServer, type ProxyServer } from "../../src/proxy/server.js";
import { DOMAIN, TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// One error boundary for the three transports (src/pipeline/boundary.ts). A stage that throws something
// other than a GatewayError (a defect, here injected through the stores the stages call) breaks the one
// request, upgrade or message that met it: a logged INTERNAL answer, a WebSocket closed with 1011. The
// process, and every other caller, goes on.

/** Looking it up throws: stage 2 fails in the HTTP request and the WebSocket upgrade. */
const BOMB = "FNtestBombKey000000000000000000";
/** Its messages throw at stage 5 (the rate limiter): stage 5 fails in a WebSocket message. */
const FUSE = "FNfuse00TestKey0000000000000000";
const KEYS: StaticKey[] = [
  ...TEST_KEYS,
  { key: BOMB, networks: "*", rate: { perSecond: 1000, burst: 1000 } },
  { key: FUSE, networks: "*", rate: { perSecond: 1000, burst: 1000 } },
];
const GOOD = TEST_KEYS[0]?.key as string;

describe("one error boundary for every transport", () => {
  let http: LoopbackNode;
  let ws: LoopbackWsNode;
  let gateway: ProxyServer;
  let port: number;
  let restore: () => void;
  const logs: string[] = [];

  beforeAll(async () => {
    restore = resolveTestHosts();
    http = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    ws = await startLoopbackWsNode(evmNode());
    const config: GatewayConfig = {
      ...DEFAULT_CONFIG,
      domain: DOMAIN,
      keys: KEYS,
      upstreams: { eth: [{ url: http.url, ws: ws.wsUrl }] },
      health: { ...DEFAULT_CONFIG.health, probeIntervalMs: 0 },
      limits: { ...DEFAULT_LIMITS, drainTimeoutMs: 0 },
    };
    const store = new StaticKeyStore(config.keys, config.defaultRate);
    const buckets = new TokenBuckets();
    gateway = createProxyServer({
      config,
      keys: {
        lookup: (digest) => {
          if (digest === keyHash(BOMB))
            throw new TypeError("Cannot read properties of undefined (reading 'plan')");
          return store.lookup(digest);
        },
      },
      limiter: {
        take: (id, rate, cost) => {
          if (id === FUSE.slice(0, 8)) throw new RangeError("bucket arithmetic went wrong");
          return buckets.take(id, rate, cost);
        },
        giveBack: (id, rate, cost) => buckets.giveBack(id, rate, cost),
      },
      logger: createLogger("info", (line) => logs.push(line)),
    });
    await new Promise<void>((resolve) => gateway.server.listen(0, "127.0.0.1", resolve));
    port = (gateway.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await gateway?.close();
    await Promise.all([http?.close(), ws?.close()]);
    restore?.();
  });

  const post = async (key: string) => {
    const r = await request(`http://127.0.0.1:${port}/${key}/`, {
      method: "POST",
      headers: { host: `eth.${DOMAIN}`, "content-type": "application/json" },
      body: '{"jsonrpc":"2.0","id":7,"method":"eth_blockNumber","params":[]}',
    });
    return { status: r.statusCode, body: await r.body.text() };
  };
  const unhandled = (transport: string) =>
    logs.filter((line) => line.includes('"msg":"unhandled"') && line.includes(`"transport":"${transport}"`));

  it("an HTTP request: a logged INTERNAL answer, and the next request is served", async () => {
    const broken = await post(BOMB);
    expect(broken.status).toBe(500);
    expect(JSON.parse(broken.body)).toMatchObject({
      jsonrpc: "2.0",
      id: null,
      error: { data: { code: "INTERNAL" } },
    });
    const [line] = unhandled("http request");
    expect(line).toContain('"code":"INTERNAL"');
    expect(line).toContain("Cannot read properties of undefined");
    expect(line).not.toContain(BOMB);
    const next = await post(GOOD);
    expect(next.status).toBe(200);
    expect(JSON.parse(next.body)).toMatchObject({ result: "0x10" });
  });

  it("a WebSocket upgrade: refused with INTERNAL, and other connections open and serve", async () => {
    const refused = await Client.refused(`ws://eth.${DOMAIN}:${port}/${BOMB}`);
    expect(refused.status).toBe(500);
    expect(refused.body).toMatchObject({ error: { data: { code: "INTERNAL" } } });
    expect(unhandled("websocket upgrade")).toHaveLength(1);
    const client = await Client.open(`ws://eth.${DOMAIN}:${port}/${GOOD}`);
    expect((await client.call("eth_chainId")).result).toBe("0x1");
    client.close();
  });

  it("a WebSocket message: an INTERNAL answer, the connection closed with 1011, and others go on", async () => {
    const witness = await Client.open(`ws://eth.${DOMAIN}:${port}/${GOOD}`);
    const broken = await Client.open(`ws://eth.${DOMAIN}:${port}/${FUSE}`);
    broken.send('{"jsonrpc":"2.0","id":41,"method":"eth_chainId","params":[]}');
    const answer = JSON.parse(await broken.waitFor((text) => text.includes('"id":41'))) as {
      error?: { code: number; data?: { code?: string } };
    };
    expect(answer.error).toMatchObject({ code: -32603, data: { code: "INTERNAL" } });
    expect(await broken.closed).toEqual({ code: 1011, reason: "internal error" });
    expect(unhandled("websocket message")).toHaveLength(1);
    expect(unhandled("websocket message")[0]).toContain("bucket arithmetic went wrong");
    // the other connection, and plain HTTP, never noticed
    expect((await witness.call("eth_chainId")).result).toBe("0x1");
    expect((await post(GOOD)).status).toBe(200);
    witness.close();
  });
});
