// The Node floor: node:http in front of an undici Pool, relaying method, path and body with no checks at
// all. No gateway on Node can be faster while doing more work. It uses undici's fastest public path,
// `stream()`, which writes the upstream's body straight into the response with backpressure, and the same
// pool size as the gateway's default.
import { createServer } from "node:http";
import { Pool } from "undici";

const pool = new Pool(process.env.BENCH_UPSTREAM as string, { connections: 64 });

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    pool
      .stream(
        {
          method: req.method as "GET" | "POST",
          path: req.url ?? "/",
          headers: { "content-type": "application/json" },
          body: chunks.length > 0 ? Buffer.concat(chunks) : null,
        },
        ({ statusCode, headers }) => {
          res.writeHead(statusCode, { "content-type": String(headers["content-type"]) });
          return res;
        },
      )
      .catch(() => res.destroy());
  });
});
server.listen(Number(process.env.BENCH_PORT), "127.0.0.1");
// The bench stops it with SIGTERM: an exit of its own lets `--cpu-prof` write the profile (bench/ab.ts).
process.on("SIGTERM", () => process.exit(0));
