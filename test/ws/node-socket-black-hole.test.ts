import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { startTcpForwarder, type TcpForwarder } from "../support/tcp-forwarder.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// The path to a node's WebSocket goes dark (a balancer or NAT between them drops the connection without a
// FIN or RST, a network split on that path alone) while the node answers the prober over HTTP, so it stays
// in rotation. Two real anvils on one chain; `a`'s WebSocket is reached through a forwarder that turns into
// a black hole. An ethers or viem app holding newHeads sends nothing: its heads must not stop silently,
// and its connection must not end as "idle": it moves to `b`, as when a node's socket closes.
const GENESIS = 1_700_000_000;

describe("a connection whose node's socket goes silent while the node answers HTTP", () => {
  let a: Anvil;
  let b: Anvil;
  let forwarder: TcpForwarder;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    [a, b] = await Promise.all([
      startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 }),
      startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 }),
    ]);
    for (let h = 1; h <= 3; h++) for (const node of [a, b]) await node.rpc("evm_mine", [GENESIS + 12 * h]);
    forwarder = await startTcpForwarder(a.port);
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, ws: `ws://127.0.0.1:${forwarder.port}`, name: "a" },
          { url: b.url, ws: b.url.replace("http:", "ws:"), name: "b", tier: "fallback" },
        ],
      },
      limits: { ws: { ...DEFAULT_LIMITS.ws, pingIntervalMs: 250, idleTimeoutMs: 3_000 } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await forwarder?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    restore?.();
  });

  it("moves to another node and the heads go on", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    expect(typeof (await client.call("eth_subscribe", ["newHeads"])).result).toBe("string");
    await Promise.all([a, b].map((node) => node.rpc("evm_mine", [GENESIS + 48])));
    await client.waitFor((t) => t.includes('"number":"0x4"'));
    forwarder.blackHole();
    const from = client.received.length;
    await Promise.all([a, b].map((node) => node.rpc("evm_mine", [GENESIS + 60])));
    // the block made while the socket was dark, then one made after: each once, in order
    const heads = async () =>
      client.received
        .slice(from)
        .filter((t) => t.includes("eth_subscription"))
        .map((t) => JSON.parse(t).params.result.number as string);
    // within a few pings the connection leaves the silent socket for `b`
    await eventually(() => gw.logs.some((line) => line.includes('"websocket moved"')), 3_000, "moved to b");
    await Promise.all([a, b].map((node) => node.rpc("evm_mine", [GENESIS + 72])));
    await client.waitFor((t) => t.includes('"number":"0x6"'), 3_000, from);
    expect(await heads()).toEqual(["0x5", "0x6"]);
    expect(client.isOpen).toBe(true);
    client.close();
  });
});
