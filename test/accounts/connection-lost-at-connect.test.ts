import { createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresUsageSink } from "../../src/keys/postgres-grants.js";
import { isUnavailable } from "../../src/store/postgres.js";

// A PostgreSQL backend ended as it starts (pg_terminate_backend, a fast shutdown, a failover ending every
// connection) sends its FATAL right after the ReadyForQuery that ends its startup: PostgresMain
// (src/backend/tcop/postgres.c) sends ReadyForQuery, then waits for a command in ReadCommand with interrupts
// enabled, and ProcessInterrupts answers the SIGTERM with ereport(FATAL, ERRCODE_ADMIN_SHUTDOWN,
// "terminating connection due to administrator command"), SQLSTATE 57P01. When both arrive in one read, pg
// emits the FATAL as the new client's `error` event before pg-pool's hand-out reaches any code after an
// `await`: a proxy flushing its usage exited (test/scale/stores-cut-under-load.test.ts shows it with a real
// server, in a storm of terminated backends). This server sends the backend's messages in that one write;
// an `error` event with no listener fails this run as an unhandled error.

/** A protocol 3 message: its type byte, its length (itself included) and its body. */
function message(type: string, body: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeInt32BE(body.length + 4);
  return Buffer.concat([Buffer.from(type), length, body]);
}
const cstring = (text: string) => Buffer.from(`${text}\0`);
const int32 = (value: number) => {
  const buffer = Buffer.alloc(4);
  buffer.writeInt32BE(value);
  return buffer;
};

/** What the backend sends from its startup to its end, as PostgreSQL's protocol docs lay them out. */
const STARTED_THEN_TERMINATED = Buffer.concat([
  message("R", int32(0)), // AuthenticationOk (trust)
  message("S", Buffer.concat([cstring("server_version"), cstring("17.6")])), // ParameterStatus
  message("K", Buffer.concat([int32(4242), int32(1234567)])), // BackendKeyData
  message("Z", Buffer.from("I")), // ReadyForQuery, idle
  message(
    "E", // ErrorResponse: severity, its untranslated form, SQLSTATE, message, then the terminator
    Buffer.concat([
      Buffer.from("S"),
      cstring("FATAL"),
      Buffer.from("V"),
      cstring("FATAL"),
      Buffer.from("C"),
      cstring("57P01"),
      Buffer.from("M"),
      cstring("terminating connection due to administrator command"),
      Buffer.from("\0"),
    ]),
  ),
]);

describe("a PostgreSQL backend terminated as its connection starts", () => {
  let server: Server;
  let url = "";
  const sockets = new Set<Socket>();

  beforeAll(async () => {
    server = createServer((socket) => {
      sockets.add(socket);
      socket.on("error", () => {});
      // the client's StartupMessage first, then the backend's whole life in one write, then its end
      socket.once("data", () => socket.end(STARTED_THEN_TERMINATED));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `postgres://postgres@127.0.0.1:${(server.address() as { port: number }).port}/gateway`;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it("fails the proxy's usage flush as the store's outage, and the process goes on", async () => {
    const sink = new PostgresUsageSink(url);
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        const batch = {
          id: `at-connect-${attempt}`,
          rows: [{ key: "atconnect", day: "2026-11-30", label: "eth", calls: 1, errors: 0, units: 10 }],
          methods: [],
          codes: [],
        };
        const error = await sink.add(batch).then(
          () => undefined,
          (failure: unknown) => failure,
        );
        expect(isUnavailable(error), String(error)).toBe(true);
      }
    } finally {
      await sink.close();
    }
  });
});
