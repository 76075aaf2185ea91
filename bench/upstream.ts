// The benchmark's upstream node, run in its own process. It must never be the bottleneck, so HTTP is
// answered by a few lines over node:net rather than node:http: keep-alive HTTP/1.1 with Content-Length
// bodies, which is all that undici, http-proxy and autocannon send.
//
//   POST, JSON-RPC  -> {"jsonrpc":"2.0","id":<the request's id>,"result":"0x10"}, per call for a batch
//   POST eth_getLogs -> the same with a result of about 1 MB
//   POST eth_chainId -> "0x1": the chain the bench's `eth` label is, which the gateway's prober checks
//   POST eth_blockNumber -> the head: BENCH_HEAD (0x10 without it), or with BENCH_BLOCK_MS set one that
//                    moves on every BENCH_BLOCK_MS, reached BENCH_HEAD_LAG_MS late (two nodes one block apart
//                    for part of each block)
//   POST eth_getBlockByNumber -> a block object: number, hash and parentHash, as the gateway's prober reads
//                    them for "latest" (reorgs) and "finalized" (head - 64, as anvil names it), so the
//                    cache's finality rules run as against a real node; BENCH_BLOCK_BYTES of filler in it
//   GET any path     -> a small REST body
//
// A node:http server on a second port serves WebSocket (eth_subscribe) and POST /push, which sends one
// newHeads notification to every subscriber stamped with process.hrtime (a system-wide monotonic clock).
import { createServer as createHttpServer } from "node:http";
import { createServer, type Socket } from "node:net";
import { type WebSocket, WebSocketServer } from "ws";

const LARGE_RESULT_BYTES = 1024 * 1024;
const REST_BODY = Buffer.from('{"last-round":4242,"time-since-last-round":1200000000,"catchup-time":0}');
const LARGE_PREFIX = Buffer.from(`"result":"0x${"ab".repeat(LARGE_RESULT_BYTES / 2)}"}`);

function head(length: number): string {
  return `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;
}

const BLOCK_MS = Number(process.env.BENCH_BLOCK_MS ?? 0);
const HEAD_LAG_MS = Number(process.env.BENCH_HEAD_LAG_MS ?? 0);
const FIXED_HEAD = Number(process.env.BENCH_HEAD ?? 0x10);
/** Blocks this far below the head are final, as anvil answers "finalized". */
const FINALITY_DEPTH = 64;
const BLOCK_FILLER = `"0x${"ab".repeat(Number(process.env.BENCH_BLOCK_BYTES ?? 0) / 2)}"`;

/** The node's head: fixed, or one block per BLOCK_MS of the wall clock, HEAD_LAG_MS late. */
function headNumber(): number {
  if (BLOCK_MS <= 0) return FIXED_HEAD;
  return Math.floor((Date.now() - HEAD_LAG_MS) / BLOCK_MS);
}

const hex = (n: number) => `0x${n.toString(16)}`;
/** A block's hash, the same on every bench node: blocks of one height are one block, so no reorg shows. */
const hashOf = (n: number) => (n < 0 ? `0x${"0".repeat(64)}` : `0xa${n.toString(16).padStart(63, "0")}`);

/** The block a tag or a number names, as a JSON text; null above the head. */
function block(param: unknown): string {
  const head = headNumber();
  const n =
    param === "finalized" || param === "safe"
      ? Math.max(0, head - FINALITY_DEPTH)
      : typeof param === "string" && param.startsWith("0x")
        ? Number.parseInt(param, 16)
        : head;
  if (n > head) return "null";
  return `{"number":"${hex(n)}","hash":"${hashOf(n)}","parentHash":"${hashOf(n - 1)}","timestamp":"${hex(n * 12)}","transactions":[],"extraData":${BLOCK_FILLER}}`;
}

interface Call {
  readonly id?: unknown;
  readonly method?: string;
  readonly params?: unknown[];
}

function answerRpc(socket: Socket, body: string): void {
  const parsed = JSON.parse(body) as Call | Call[];
  if (!Array.isArray(parsed) && parsed.method === "eth_getLogs") {
    const opening = Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(parsed.id)},`);
    socket.write(head(opening.length + LARGE_PREFIX.length));
    socket.write(opening);
    socket.write(LARGE_PREFIX);
    return;
  }
  const one = (call: Call) => `{"jsonrpc":"2.0","id":${JSON.stringify(call.id)},"result":${result(call)}}`;
  const text = Array.isArray(parsed) ? `[${parsed.map(one).join(",")}]` : one(parsed);
  socket.write(head(Buffer.byteLength(text)) + text);
}

function result(call: Call): string {
  if (call.method === "eth_chainId") return '"0x1"';
  if (call.method === "eth_blockNumber") return `"${hex(headNumber())}"`;
  if (call.method === "eth_getBlockByNumber") return block(call.params?.[0]);
  return '"0x10"';
}

function serveHttp(socket: Socket): void {
  let pending: Buffer = Buffer.alloc(0);
  socket.setNoDelay(true);
  socket.on("error", () => socket.destroy());
  socket.on("data", (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    socket.cork();
    for (;;) {
      const end = pending.indexOf("\r\n\r\n");
      if (end < 0) break;
      const header = pending.subarray(0, end).toString("latin1");
      const lengthMatch = /\r\ncontent-length:\s*(\d+)/i.exec(header);
      const length = lengthMatch ? Number(lengthMatch[1]) : 0;
      if (pending.length < end + 4 + length) break;
      const body = pending.subarray(end + 4, end + 4 + length).toString("utf8");
      pending = pending.subarray(end + 4 + length);
      if (header.startsWith("POST")) answerRpc(socket, body);
      else socket.write(head(REST_BODY.length) + REST_BODY.toString("latin1"));
    }
    socket.uncork();
  });
}

const subscribers = new Set<WebSocket>();
let nextSubscription = 1;

function serveWebSocket(socket: WebSocket): void {
  socket.on("message", (data) => {
    const call = JSON.parse(String(data)) as { id: unknown; method: string };
    if (call.method === "eth_subscribe") {
      subscribers.add(socket);
      const id = `0x${(nextSubscription++).toString(16)}`;
      (socket as WebSocket & { subscription?: string }).subscription = id;
      socket.send(`{"jsonrpc":"2.0","id":${JSON.stringify(call.id)},"result":"${id}"}`);
    } else socket.send(`{"jsonrpc":"2.0","id":${JSON.stringify(call.id)},"result":"0x10"}`);
  });
  socket.on("close", () => subscribers.delete(socket));
}

function push(): number {
  const stamp = process.hrtime.bigint().toString();
  for (const socket of subscribers) {
    const id = (socket as WebSocket & { subscription?: string }).subscription;
    socket.send(
      `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"${id}","result":{"number":"0x10","sentAt":"${stamp}"}}}`,
    );
  }
  return subscribers.size;
}

createServer(serveHttp).listen(Number(process.env.BENCH_PORT), "127.0.0.1");
const control = createHttpServer((req, res) => {
  if (req.method === "POST" && req.url === "/push") res.end(String(push()));
  else res.writeHead(404).end();
}).listen(Number(process.env.BENCH_WS_PORT), "127.0.0.1");
new WebSocketServer({ server: control, perMessageDeflate: false }).on("connection", serveWebSocket);
