import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// docs/websocket.md bounds a client that does not read (maxBufferedBytes, 1008) instead of growing memory.
// The other way had no bound: a node that stops reading its socket (hung, its TCP connection still open)
// had the gateway keep every message a client sent it (notifications, which no in-flight cap counts: some
// 300 MiB at an ordinary key's rate). Past the bound the node is a lost one, and the connection moves off
// it; what a client sends while the connection has no node is bounded the same way (1008).
const BOUND = 1024 * 1024;

describe("a node that stops reading its socket", () => {
  let http: Server;
  let wss: WebSocketServer;
  let gw: RunningGateway;
  let restore: () => void = () => {};
  let hungSockets = 0;

  beforeAll(async () => {
    restore = resolveTestHosts();
    http = createServer((_req, res) => res.end());
    wss = new WebSocketServer({ server: http, perMessageDeflate: false });
    // the node takes the socket, then never reads from it again
    wss.on("connection", (ws) => {
      hungSockets++;
      (ws as unknown as { _socket: { pause(): void } })._socket.pause();
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    const { port } = http.address() as AddressInfo;
    gw = await startGateway({
      upstreams: {
        eth: [{ url: `http://127.0.0.1:${port}`, name: "hung" }],
      },
      // no probes: the hung node answers none over HTTP, and would be out of rotation before the test
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 0 },
      limits: { ws: { ...DEFAULT_LIMITS.ws, maxBufferedBytes: BOUND } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    for (const c of wss?.clients ?? []) c.terminate();
    wss?.close();
    http?.close();
    restore();
  });

  it("is left past the send buffer's bound, and what the client sends meanwhile is bounded too", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    expect(hungSockets).toBe(1);
    const data = `0x${"00".repeat(250_000)}`;
    const notification = `{"jsonrpc":"2.0","method":"eth_call","params":[{"to":"0x${"01".repeat(20)}","data":"${data}"},"latest"]}`;
    // some 40 MB: far past the bound and what the kernel's socket buffers take; the node reads none
    for (let i = 0; i < 80; i++) client.send(notification);
    // the node is left (moved off, here to itself again, the label's only node), and the rest, sent while
    // the connection changes its node, is more than the bound: the client is closed, not held for
    const closed = await client.closed;
    expect(closed).toEqual({ code: 1008, reason: "too much sent while the connection changes its node" });
    expect(hungSockets).toBeGreaterThan(1);
    // and the label still serves a new connection
    const next = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    next.close();
  }, 30_000);
});
