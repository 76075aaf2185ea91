import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * An Octez node's `GET /monitor/heads/main` as it answers: a chunked 200 `application/json` that the node
 * keeps open, one block header object per head (every other path 404). For the suites of streams held
 * over HTTP (a key withdrawn, a JWT expired while one is open).
 */
export interface HeadsStreamNode {
  readonly url: string;
  /** The streams open on it: one per request the gateway relays. */
  readonly streams: Set<ServerResponse>;
  /** Pushes a head of `level` on every open stream. */
  push(level: number): void;
  close(): void;
}

export async function startHeadsStreamNode(): Promise<HeadsStreamNode> {
  const streams = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    if (req.url !== "/monitor/heads/main") return res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/json" });
    res.flushHeaders();
    streams.add(res);
    res.on("close", () => streams.delete(res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    streams,
    push: (level) => {
      for (const res of streams) res.write(head(level));
    },
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** One head as Octez's /monitor/heads/<chain> pushes it: a block header, one JSON object per chunk. */
function head(level: number): string {
  return `${JSON.stringify({
    hash: `BL${String(level).padStart(49, "a")}`,
    level,
    proto: 19,
    predecessor: `BL${String(level - 1).padStart(49, "a")}`,
    timestamp: new Date(1_700_000_000_000 + level * 8_000).toISOString().replace(".000", ""),
    validation_pass: 4,
    operations_hash: "LLoZvtaRcbpUgE2Cu3zzXjeGbJ7Bpbb2UbJB2Q3BrtHV3N5kEjvDd",
    fitness: ["02", "00000000", "", "ffffffff", "00000000"],
    context: "CoVZiJQZGLxsDPxXUfM3NERRxCB3h5HQWFJ2qfavGADBCNiBvbvn",
  })}\n`;
}
