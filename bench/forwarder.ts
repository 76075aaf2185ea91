// A counting forwarder between a gateway and its node (BENCH_UPSTREAM), run in its own process: every POST
// goes on to the node unchanged and its answer comes back unchanged, and each is counted, so the bench can
// say how many node requests a client request cost. `GET /counts` answers what it counted.
//
// The gateway's prober sends its calls with id 1 (src/upstream/probe-call.ts) and the bench's clients
// never do, so the prober's requests are counted apart: they are the same with the cache on or off.
import { createServer } from "node:http";
import { Pool } from "undici";

const pool = new Pool(process.env.BENCH_UPSTREAM as string, { connections: 64 });

interface Counts {
  /** Requests sent on for clients of the gateway (anything but the prober's). */
  client: number;
  /** The prober's requests: a single call with id 1. */
  prober: number;
  /** Client requests by method ("batch" for a batch). */
  readonly methods: Record<string, number>;
}

const counts: Counts = { client: 0, prober: 0, methods: {} };

function count(body: Buffer): void {
  let call: unknown;
  try {
    call = JSON.parse(body.toString("utf8"));
  } catch {
    call = undefined;
  }
  const single = typeof call === "object" && call !== null && !Array.isArray(call) ? call : undefined;
  const { id, method } = (single ?? {}) as { id?: unknown; method?: unknown };
  if (id === 1) {
    counts.prober++;
    return;
  }
  counts.client++;
  const name = Array.isArray(call) ? "batch" : typeof method === "string" ? method : "other";
  counts.methods[name] = (counts.methods[name] ?? 0) + 1;
}

const server = createServer((req, res) => {
  if (req.method === "GET" && req.url === "/counts") {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(counts));
    return;
  }
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    count(body);
    pool
      .stream(
        {
          method: req.method as "GET" | "POST",
          path: req.url ?? "/",
          headers: { "content-type": "application/json" },
          body,
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
