import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// An HTTP caller's eth_getBlockByHash was at the node, a WebSocket caller's identical call waited on it
// (coalesced), and the HTTP caller hung up: its node call was cancelled, the socket's caller's call went to
// the node again, and it was charged the full price, not the coalesced share. docs/cache.md, "Coalescing":
// the call belongs to every client waiting on it, and the first hanging up does not cancel it for the
// others. A WebSocket caller waiting holds the call until its answer lands or its connection closes.
const BLOCK = { number: "0x5", parentHash: `0x${"cd".repeat(32)}`, transactions: [] };

describe("an HTTP leader hanging up while a WebSocket caller waits on its call", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  let release: () => void = () => {};
  let held = Promise.resolve();
  // the node's HTTP requests are not in `connections`: count every eth_getBlockByHash it received
  const asked = () =>
    [...node.methods(), ...node.httpMethods].filter((m) => m === "eth_getBlockByHash").length;
  /** The gateway's open connections: one fewer once it has seen a client hang up. */
  const connections = () =>
    new Promise<number>((resolve, reject) =>
      gw.gateway.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
    );

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(
      evmNode({ eth_getBlockByHash: ([hash]: [string]) => held.then(() => ({ ...BLOCK, hash })) }),
    );
    gw = await startGateway({ upstreams: { eth: [node.url] }, cache: { ...DEFAULT_CACHE, enabled: true } });
  });
  afterAll(async () => {
    release();
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("the node call goes on for the socket's caller", async () => {
    const hash = `0x${"0b".repeat(32)}`;
    held = new Promise((resolve) => {
      release = resolve;
    });
    const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const controller = new AbortController();
    const overHttp = request(`${gw.origin}/${KEYS.all}`, {
      method: "POST",
      headers: { host: `eth.${DOMAIN}`, "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getBlockByHash", params: [hash, false] }),
      signal: controller.signal,
    }).catch(() => undefined);
    await eventually(() => asked() === 1, 2_000, "the HTTP caller's call at the node");
    socket.ws.send(
      JSON.stringify({ jsonrpc: "2.0", id: "w", method: "eth_getBlockByHash", params: [hash, false] }),
    );
    await eventually(
      async () => (await gw.metric("gateway_cache_waiting", { label: "eth" })) === 1,
      2_000,
      "ws waiting",
    );
    const open = await connections();
    controller.abort();
    await overHttp;
    // the server hears the abort as its socket closes, later on a loaded host
    await eventually(async () => (await connections()) < open, 10_000, "the HTTP caller gone");
    release();
    const answer = JSON.parse(await socket.waitFor((t) => t.includes('"id":"w"'))) as { result?: unknown };
    socket.close();
    expect(answer.result).toEqual({ ...BLOCK, hash });
    // the node is asked once, for both callers, and the socket's caller is served as coalesced (cachedShare)
    expect({
      asked: asked(),
      coalesced: await gw.metric("gateway_cache_requests_total", { label: "eth", outcome: "coalesced" }),
      miss: await gw.metric("gateway_cache_requests_total", { label: "eth", outcome: "miss" }),
    }).toEqual({ asked: 1, coalesced: 1, miss: 1 });
  });
});
