import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningGateway, rpcBody, startGateway, TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// A balancer that writes the client's port beside its address in X-Forwarded-For: Azure Application
// Gateway's "format of the x-forwarded-for header is a comma-separated list of IP:port"
// (learn.microsoft.com, "How an application gateway works", and its rewrite docs' "Remove port information
// from the X-Forwarded-For header"), `[v6]:port` for an IPv6 client. Behind one, the gateway took
// `203.0.113.7:54321` whole as the client's address: a key whose `ips` list names 203.0.113.0/24 was refused
// (403 KEY_SETTING_REFUSED, setting "ips") for every call of its allowed client, and each new connection of
// a public caller (a new source port) had a per-IP bucket of its own, so limits.publicRate never held.

const KEY = "FNxffPort000000000000000000000";
const RATE = { perSecond: 10_000, burst: 10_000 };

describe("X-Forwarded-For hops written with the client's port", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    gw = await startGateway({
      upstreams: { eth: [node.url], bsc: [node.url] },
      publicHosts: { "bsc-public.gw.test": "bsc" },
      // the balancer: the test's loopback peer
      trustedProxies: ["127.0.0.0/8"],
      limits: { publicRate: { perSecond: 0.01, burst: 1 } },
      keys: [
        ...TEST_KEYS,
        { key: KEY, networks: "*", rate: RATE, settings: { ips: ["203.0.113.0/24", "2001:db8::/32"] } },
      ],
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const keyed = (forwarded: string) =>
    gw.call("eth", `/${KEY}`, {
      body: rpcBody("eth_blockNumber"),
      headers: { "x-forwarded-for": forwarded },
    });

  it("a key's ips list matches the address before the port, IPv4 and bracketed IPv6 alike", async () => {
    expect((await keyed("203.0.113.7:54321")).status).toBe(200);
    expect((await keyed("[2001:db8::7]:54321")).status).toBe(200);
    expect((await keyed("[2001:db8::8]")).status).toBe(200);
    // a client the list leaves out is still refused, with or without its port
    expect((await keyed("198.51.100.1:54321")).status).toBe(403);
    expect((await keyed("[2001:db9::1]:443")).status).toBe(403);
    // a forged hop before the balancer's own is not the client
    expect((await keyed("203.0.113.9, 198.51.100.1:54321")).status).toBe(403);
  });

  it("a public caller's connections from other ports share its one per-IP bucket", async () => {
    const statuses: number[] = [];
    for (const hop of ["198.51.100.20:40001", "198.51.100.20:40002"])
      statuses.push(
        (
          await gw.call("bsc", "/", {
            host: "bsc-public.gw.test",
            body: rpcBody("eth_blockNumber"),
            headers: { "x-forwarded-for": hop },
          })
        ).status,
      );
    expect(statuses).toEqual([200, 429]);
  });
});
