import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { DOMAIN, KEYS, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, startLoopbackNode } from "../support/loopback-node.js";
import { evmNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// The public rate (`limits.publicRate`) and the per-address WebSocket cap (`ws.maxConnectionsPerIp`)
// counted each IPv6 address apart: one subscriber is routinely given a whole /64, so it had 2^64 buckets
// and caps to draw from, one per address it chose to send from. An IPv6 client is now counted by its /64,
// as the control plane's sign-up limits count it; an IPv4 client by its address, as before. The clients
// here are behind a balancer on 127.0.0.1 (`trustedProxies`), which names them in X-Forwarded-For.

describe("an IPv6 client is counted by its /64", () => {
  let restore: () => void;
  beforeAll(() => {
    restore = resolveTestHosts();
  });
  afterAll(() => restore());

  it("addresses of one /64 share the public rate; another /64 and each IPv4 address have their own", async () => {
    const node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    const gw = await startGateway({
      upstreams: { bsc: [node.url] },
      publicHosts: { "bsc-public.gw.test": "bsc" },
      trustedProxies: ["127.0.0.0/8"],
      limits: { publicRate: { perSecond: 0.01, burst: 1 } },
    });
    try {
      const status = async (client: string) =>
        (
          await gw.call("bsc", "/", {
            host: "bsc-public.gw.test",
            body: rpcBody("eth_blockNumber"),
            headers: { "x-forwarded-for": client },
          })
        ).status;
      expect(await status("2001:db8:1:2::1")).toBe(200);
      // the next address of the same /64, written another way: the same bucket, now empty
      expect(await status("2001:0db8:0001:0002:ffff:ffff:ffff:fffe")).toBe(429);
      expect(await status("2001:db8:1:2:abcd::9")).toBe(429);
      // the neighbouring /64 is another subscriber
      expect(await status("2001:db8:1:3::1")).toBe(200);
      expect(await status("203.0.113.1")).toBe(200);
      expect(await status("203.0.113.2")).toBe(200);
    } finally {
      await gw.close();
      await node.close();
    }
  });

  it("WebSocket connections from addresses of one /64 count against one maxConnectionsPerIp", async () => {
    const node = await startLoopbackWsNode(evmNode({}));
    const gw = await startGateway({
      upstreams: { eth: [node.url] },
      trustedProxies: ["127.0.0.0/8"],
      limits: { ws: { ...DEFAULT_LIMITS.ws, maxConnectionsPerIp: 2 } },
    });
    const url = `ws://eth.${DOMAIN}:${gw.port}/${KEYS.noArchive}`;
    const from = (client: string) => ({ "x-forwarded-for": client });
    const open: Client[] = [];
    try {
      open.push(await Client.open(url, from("2001:db8:1:2::1")));
      open.push(await Client.open(url, from("2001:db8:1:2::2")));
      const refused = await Client.refused(url, from("2001:db8:1:2::3"));
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ error: { data: { code: "TOO_MANY_CONNECTIONS" } } });
      // another /64 opens
      open.push(await Client.open(url, from("2001:db8:1:3::1")));
    } finally {
      for (const client of open) client.ws.terminate();
      await gw.close();
      await node.close();
    }
  });
});
