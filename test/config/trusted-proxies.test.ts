import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { clientAddress, TrustedProxies } from "../../src/http/client-address.js";
import { rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, startLoopbackNode } from "../support/loopback-node.js";
import { configProblems } from "./config-problems.js";

// trustedProxies was a list of any strings, each compared with the TCP peer's address as written: a CIDR
// block (what nginx's set_real_ip_from takes, and a key's `ips`) or a host name was accepted at start and
// never matched, so every client behind the balancer shared its one per-IP bucket. Entries are now
// addresses or CIDR blocks, anything else refused at start.
/** A request from `peer` that says it was forwarded for `forwarded`. */
function request(peer: string, forwarded?: string): IncomingMessage {
  return {
    socket: { remoteAddress: peer },
    rawHeaders: forwarded === undefined ? [] : ["X-Forwarded-For", forwarded],
  } as unknown as IncomingMessage;
}

describe("trustedProxies entries", () => {
  it("an entry that is not an IP address or a CIDR block is refused at start, by its place", () => {
    const problems = configProblems(
      'trustedProxies: ["10.0.0.7", "balancer.internal", "10.0.0.0/33", "not-an-ip", "fd00::/8"]\n',
    );
    const lines = problems.split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /c\w+\.yaml:1:30: trustedProxies\[1\]: "balancer\.internal" is not an IP address or a CIDR block/,
    );
    expect(lines[1]).toMatch(/:1:51: trustedProxies\[2\]: "10\.0\.0\.0\/33" is not/);
    expect(lines[2]).toMatch(/:1:66: trustedProxies\[3\]: "not-an-ip" is not/);
  });

  it("addresses and CIDR blocks, IPv4, IPv6 and IPv4-mapped, are taken", () => {
    expect(
      configProblems(
        'trustedProxies: ["10.0.0.7", "10.0.0.0/8", "2001:db8::1", "fd00::/8", "::ffff:10.0.0.1"]\n',
      ),
    ).toBe("");
  });

  it("a peer inside a block is believed, as is one that shows in IPv4-mapped IPv6", () => {
    const proxies = new TrustedProxies(["10.0.0.0/8", "fd00::/8", "::ffff:192.0.2.9"]);
    expect(clientAddress(request("10.1.2.3", "203.0.113.1"), proxies)).toBe("203.0.113.1");
    expect(clientAddress(request("::ffff:10.1.2.3", "203.0.113.2"), proxies)).toBe("203.0.113.2");
    expect(clientAddress(request("fd00::5", "203.0.113.3"), proxies)).toBe("203.0.113.3");
    // a mapped entry is its IPv4 address, however the socket shows the peer
    expect(clientAddress(request("192.0.2.9", "203.0.113.4"), proxies)).toBe("203.0.113.4");
    // a hop inside a block is a proxy too: the client is the right-most hop that is not
    expect(clientAddress(request("10.1.2.3", "203.0.113.5, 10.9.9.9"), proxies)).toBe("203.0.113.5");
    // outside every block: the peer is the client, whatever it says
    expect(clientAddress(request("11.0.0.1", "203.0.113.6"), proxies)).toBe("11.0.0.1");
    expect(clientAddress(request("::ffff:11.0.0.1", "203.0.113.6"), proxies)).toBe("11.0.0.1");
    // a hop that is no address is no proxy: it is what the client said, and counted as such
    expect(clientAddress(request("10.1.2.3", "forged"), proxies)).toBe("forged");
  });

  it("clients behind a balancer in a CIDR block each get their own per-IP bucket", async () => {
    expect(configProblems('trustedProxies: ["127.0.0.0/8"]\n')).toBe("");
    const node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    const gw = await startGateway({
      upstreams: { bsc: [node.url] },
      publicHosts: { "bsc-public.gw.test": "bsc" },
      trustedProxies: ["127.0.0.0/8"],
      limits: { publicRate: { perSecond: 0.01, burst: 1 } },
    });
    try {
      const call = (client: string) =>
        gw.call("bsc", "/", {
          host: "bsc-public.gw.test",
          body: rpcBody("eth_blockNumber"),
          headers: { "x-forwarded-for": client },
        });
      const statuses: number[] = [];
      // three clients behind the balancer (127.0.0.1), one call each: each has its own bucket of 1
      for (const client of ["203.0.113.1", "203.0.113.2", "203.0.113.3"])
        statuses.push((await call(client)).status);
      // and the first one's second call finds its bucket empty
      statuses.push((await call("203.0.113.1")).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
    } finally {
      await gw.close();
      await node.close();
    }
  });
});
