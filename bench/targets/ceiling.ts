// The Node ceiling: node:http that reads each request's body, parses it and answers a fixed JSON-RPC result
// with the request's own id, asking nobody. A cache hit does at least this much (read the call, find its
// id, answer it) and relays nothing, so no answer from memory on Node is faster on this machine.
import { createServer } from "node:http";

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    let id: unknown = null;
    try {
      id = (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { id?: unknown }).id ?? null;
    } catch {
      // not JSON: answered with a null id, as a node answers a parse error
    }
    const body = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":"0x1"}`;
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  });
});
server.listen(Number(process.env.BENCH_PORT), "127.0.0.1");
