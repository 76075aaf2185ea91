import { createServer, type Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";

const CHUNK = 64 * 1024;
const BODY_BYTES = 96 * 1024 * 1024;

// A node's answer is written into the client's socket as it arrives. When the client reads slowly, the
// gateway stops reading from the node instead of holding the answer in memory; when the client reads
// again, the rest follows, byte for byte.
describe("an answer larger than a slow client reads", () => {
  let node: Server;
  let gw: RunningGateway;
  let written = 0;

  beforeAll(async () => {
    node = createServer((_req, res) => {
      const head = '{"jsonrpc":"2.0","id":1,"result":"';
      const tail = '"}';
      res.writeHead(200, { "content-type": "application/json", "content-length": BODY_BYTES });
      const filler = Buffer.alloc(CHUNK, "a");
      written = 0;
      const pump = (): void => {
        while (written < BODY_BYTES) {
          const size = Math.min(CHUNK, BODY_BYTES - written);
          let chunk = filler.subarray(0, size);
          if (written === 0) chunk = Buffer.concat([Buffer.from(head), filler.subarray(head.length, size)]);
          if (written + size === BODY_BYTES)
            chunk = Buffer.concat([chunk.subarray(0, size - 2), Buffer.from(tail)]);
          written += size;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
        res.end();
      };
      pump();
    });
    await new Promise<void>((resolve) => node.listen(0, "127.0.0.1", resolve));
    const { port } = node.address() as AddressInfo;
    gw = await startGateway({
      upstreams: { eth: [`http://127.0.0.1:${port}`] },
      limits: { upstream: { ...DEFAULT_LIMITS.upstream, maxResponseBytes: 2 * BODY_BYTES } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    node?.closeAllConnections();
    await new Promise((resolve) => node?.close(resolve));
  });

  it("pauses the node while the client does not read, then delivers every byte", async () => {
    const body = rpcBody("eth_blockNumber");
    const socket = connect(gw.port, "127.0.0.1");
    socket.write(
      `POST /${KEYS.all} HTTP/1.1\r\nhost: eth.${DOMAIN}\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
    socket.pause();
    // Wait until the node has written all it can: its count stops moving.
    let last = -1;
    while (written !== last) {
      last = written;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const writtenWhilePaused = written;

    let received = 0;
    let head = "";
    let tail = Buffer.alloc(0);
    socket.on("data", (data: Buffer) => {
      received += data.length;
      if (head.length < 512) head += data.subarray(0, 512).toString("latin1");
      tail = Buffer.concat([tail, data]).subarray(-2);
    });
    socket.resume();
    await new Promise((resolve) => socket.once("close", resolve));

    // Only socket buffers hold what the client has not read; without backpressure the node sends it all.
    expect(writtenWhilePaused).toBeLessThan(BODY_BYTES / 2);
    expect(head).toMatch(/^HTTP\/1\.1 200 /);
    expect(head).toContain(`content-length: ${BODY_BYTES}`);
    const headerBytes = head.indexOf("\r\n\r\n") + 4;
    expect(received - headerBytes).toBe(BODY_BYTES);
    expect(tail.toString()).toBe('"}');
  });
});
