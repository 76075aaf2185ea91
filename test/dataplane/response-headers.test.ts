import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";

// The client gets the node's answer with the headers that describe it (type, length, encoding, caching,
// Retry-After) and the gateway's CORS header; cookies, banners and anything else of the node's stay behind.
describe("upstream response headers", () => {
  let node: Server;
  let gw: RunningGateway;
  const answer = '{"jsonrpc":"2.0","id":1,"result":"0x1"}';

  beforeAll(async () => {
    node = createServer((_req, res) => {
      res.writeHead(
        200,
        [
          ["CONTENT-TYPE", "application/json; charset=utf-8"],
          ["Content-Length", String(Buffer.byteLength(answer))],
          ["ETag", '"v1"'],
          ["cache-control", "no-store"],
          ["Last-Modified", "Mon, 23 Nov 2026 12:00:00 GMT"],
          ["Retry-After", "3"],
          ["Set-Cookie", "session=secret"],
          ["Server", "geth/v1.14"],
          ["X-Node-Id", "internal-7"],
          ["Content-Tape", "a name one letter off"],
          ["eTAG-", "a name one byte longer"],
        ].flat(),
      );
      res.end(answer);
    });
    await new Promise<void>((resolve) => node.listen(0, "127.0.0.1", resolve));
    const { port } = node.address() as AddressInfo;
    gw = await startGateway({ upstreams: { eth: [`http://127.0.0.1:${port}`] } });
  });
  afterAll(async () => {
    await gw?.close();
    await new Promise((resolve) => node?.close(resolve));
  });

  it("passes the describing headers whatever their case, and nothing else of the node's", async () => {
    const res = await gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_blockNumber") });
    expect(res.status).toBe(200);
    expect(res.text).toBe(answer);
    const { date, connection, "keep-alive": keepAlive, ...rest } = res.headers;
    expect(rest).toEqual({
      // the request's id (docs/operations.md), the gateway's own
      "x-request-id": expect.stringMatching(/^[0-9a-f-]{36}$/),
      // what it cost (docs/compute-units.md): eth_blockNumber's 10
      "x-compute-units": "10",
      "content-type": "application/json; charset=utf-8",
      "content-length": String(Buffer.byteLength(answer)),
      etag: '"v1"',
      "cache-control": "no-store",
      "last-modified": "Mon, 23 Nov 2026 12:00:00 GMT",
      "retry-after": "3",
      "access-control-allow-origin": "*",
      "access-control-expose-headers":
        "x-cache, x-upstream-tier, x-request-id, x-compute-units, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset",
    });
  });
});
