import { createServer } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";

const CHUNK = 64 * 1024;
const BODY_BYTES = 96 * 1024 * 1024;

/** A node that answers every call with BODY_BYTES in 64 KiB writes, as fast as its socket takes them. */
function bigAnswerNode() {
  const state = { written: 0, aborted: 0 };
  const server = createServer((_req, res) => {
    const head = '{"jsonrpc":"2.0","id":1,"result":"';
    const tail = '"}';
    res.writeHead(200, { "content-type": "application/json", "content-length": BODY_BYTES });
    res.on("close", () => {
      if (!res.writableFinished) state.aborted++;
    });
    const filler = Buffer.alloc(CHUNK, "a");
    state.written = 0;
    const pump = (): void => {
      while (state.written < BODY_BYTES) {
        const size = Math.min(CHUNK, BODY_BYTES - state.written);
        let chunk = filler.subarray(0, size);
        if (state.written === 0)
          chunk = Buffer.concat([Buffer.from(head), filler.subarray(head.length, size)]);
        if (state.written + size === BODY_BYTES)
          chunk = Buffer.concat([chunk.subarray(0, size - 2), Buffer.from(tail)]);
        state.written += size;
        if (!res.write(chunk)) return void res.once("drain", pump);
      }
      res.end();
    };
    pump();
  });
  return { server, state };
}

async function startPair(limits: Record<string, unknown> = {}) {
  const node = bigAnswerNode();
  await new Promise<void>((resolve) => node.server.listen(0, "127.0.0.1", resolve));
  const { port } = node.server.address() as AddressInfo;
  const gw = await startGateway({
    upstreams: { eth: [`http://127.0.0.1:${port}`] },
    limits: { ...limits, upstream: { ...DEFAULT_LIMITS.upstream, maxResponseBytes: 2 * BODY_BYTES } },
  });
  const close = async () => {
    await gw.close();
    node.server.closeAllConnections();
    await new Promise((resolve) => node.server.close(resolve));
  };
  return { node: node.state, gw, close };
}

/** Sends one call on a raw socket and leaves the socket paused: the client reads nothing yet. */
function pausedCall(gw: RunningGateway): Socket {
  const body = rpcBody("eth_blockNumber");
  const socket = connect(gw.port, "127.0.0.1");
  socket.write(
    `POST /${KEYS.all} HTTP/1.1\r\nhost: eth.${DOMAIN}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
  socket.pause();
  return socket;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// A node's answer is written into the client's socket as it arrives. When the client reads slowly, the
// gateway stops reading from the node instead of holding the answer in memory; when the client reads
// again, the rest follows, byte for byte.
describe("an answer larger than a slow client reads", () => {
  let pair: Awaited<ReturnType<typeof startPair>>;
  beforeAll(async () => {
    pair = await startPair();
  });
  afterAll(async () => {
    await pair?.close();
  });

  it("pauses the node while the client does not read, then delivers every byte", async () => {
    const { node, gw } = pair;
    const socket = pausedCall(gw);
    // Wait until the node has written all it can: its count stops moving for a quarter second.
    let last = -1;
    const deadline = Date.now() + 10_000;
    while (node.written !== last) {
      if (Date.now() > deadline) throw new Error(`the node still writing after 10 s: ${node.written} bytes`);
      last = node.written;
      await sleep(250);
    }
    const writtenWhilePaused = node.written;

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

// A client that stops reading for good leaves its socket idle (the gateway has paused the node and
// writes nothing more): after socketIdleTimeoutMs it is cut and the node's answer aborted with it. One
// that pauses for less than that is not.
describe("a client that stops reading", () => {
  let pair: Awaited<ReturnType<typeof startPair>>;
  beforeAll(async () => {
    pair = await startPair({ socketIdleTimeoutMs: 600, connectionsCheckingIntervalMs: 100 });
  });
  afterAll(async () => {
    await pair?.close();
  });

  it("is cut, and the node's answer aborted, once its socket has been idle for the limit", async () => {
    const { node, gw } = pair;
    const abortedBefore = node.aborted;
    const socket = pausedCall(gw);
    const deadline = Date.now() + 10_000;
    while (node.aborted === abortedBefore && Date.now() < deadline) await sleep(50);
    expect(node.aborted).toBe(abortedBefore + 1);
    expect(node.written).toBeLessThan(BODY_BYTES / 2);
    socket.destroy();
  });

  it("is not cut while it keeps reading, with pauses shorter than the idle limit", async () => {
    const { node, gw } = pair;
    const abortedBefore = node.aborted;
    const socket = pausedCall(gw);
    let received = 0;
    socket.on("data", (data: Buffer) => {
      received += data.length;
    });
    // Read for 100 ms, stop for 400 ms (two thirds of the limit), over and over.
    for (let round = 0; round < 5; round++) {
      socket.resume();
      await sleep(100);
      socket.pause();
      await sleep(400);
    }
    expect(node.aborted).toBe(abortedBefore);
    expect(received).toBeGreaterThan(4 * CHUNK);
    socket.destroy();
  });
});
